/* SPDX-License-Identifier: Apache-2.0 */
/*
 * files.h - creating the plugin's directories and files safely: the JSON log
 * (sink/json/writer.c), the Prometheus files (sink/prom/prom_file.c) and trace
 * mode's file (src/trace/). In io/, below all of them; it uses nothing of ours.
 *
 * Dump directories are often shared: /tmp, or a job directory on a cluster
 * file system where other users can create entries. Whoever can create a
 * name there could plant a symbolic link at the path we are about to write
 * (<dir>/<host>-pid<pid>.log is easy to guess) and have the job overwrite or
 * chmod any file its user can write. So:
 *  - a file is only ever created: O_CREAT|O_EXCL, which also refuses a link
 *    at the name; an existing file or link is never opened for writing;
 *  - when the usual name is taken (a planted link, or a file left by an
 *    earlier process that had our pid), the file gets a random suffix that
 *    cannot be guessed ahead of time, and the caller says so;
 *  - modes (0755 directories, 0644 files, whatever the umask: the node
 *    exporter and other users must read them) are set through the
 *    descriptor of what we just created, never through a path that could
 *    have been swapped for a link since;
 *  - directories that already exist when the directory is first made (at
 *    the job's start: links the user set up included, /scratch -> /lustre/...)
 *    are used as they are, and never chmodded;
 *  - a file deleted while we write it (or its directory) is noticed
 *    (ins_files_gone), and its writer creates a new one by these rules.
 *
 * Making a directory again. The directory, or a parent of it, may be deleted
 * while the job runs and a link planted in its place by someone who can write
 * the parent (a shared /tmp): following it would put our files in the link's
 * target. So a directory is a struct ins_files_dir that remembers its first
 * making: which components of its path were symbolic links then, and the
 * directory (device, inode) each led to. Every making walks the path one
 * component at a time from a descriptor (openat, O_NOFOLLOW), makes the missing
 * ones with mkdirat, and creates the file with openat in the last directory's
 * descriptor, so no name is looked up twice. After the first making, a
 * component that is a link where there was none (one we made included), or a
 * link that now leads to another directory, is refused: the making fails
 * (ELOOP), and ins_files_why names the component for the caller's one warning.
 * A link that was there and is gone is made a directory of ours; a directory
 * where a link was is used (neither can put our files where the user did not).
 */
#ifndef INS_FILES_H
#define INS_FILES_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define INS_DIR_MODE 0755
#define INS_FILE_MODE 0644
/* Links a path can go through at all: Linux follows at most 40 in one lookup (ELOOP). */
#define INS_FILES_MAX_LINKS 40

/* A directory we create files in, and what its path was at its first making. */
/* Two threads may make one directory at once (the Prometheus files of two GPUs, written by
 * the dump thread and by a finalize), and a fork may come in the middle of a making: no
 * lock, so none is ever inherited held. What the first making found is published once
 * (`state`: the one making that claims it writes nlinks and link, then marks it known,
 * release; a making reads them only once it is known) and never changes after. The
 * refusal's text is the calling thread's own (ins_files_why). */
enum { INS_DIR_UNMADE, INS_DIR_RECORDING, INS_DIR_KNOWN };
struct ins_files_dir {
  char path[PATH_MAX];  /* set before any making (ins_files_dir_set) */
  _Atomic int state;    /* INS_DIR_KNOWN: every making is checked against what was found then */
  int nlinks;           /* components that were symbolic links then */
  struct { uint32_t comp; dev_t dev; ino_t ino; } link[INS_FILES_MAX_LINKS];
};

/* Set d's path, before any thread makes it. A new path forgets what was remembered; the
 * same path keeps it (a forked child, whose making is checked against its parent's first
 * one). */
void ins_files_dir_set(struct ins_files_dir *d, const char *path);

/* Make d's directory and its missing parents (each new one INS_DIR_MODE; with make false,
 * ENOENT instead): a descriptor of it (O_PATH: for the *at calls), or -1 with errno
 * (ENOTDIR if a component is not a directory; ELOOP with a refusal in d->why, see the
 * top). The first that succeeds is remembered. */
int ins_files_dir_open(struct ins_files_dir *d, bool make);

/* What a failed call on d says: this thread's last refusal (ELOOP), written in buf (cap
 * bytes), or strerror(err). */
#define INS_FILES_WHY_MAX (PATH_MAX + 128)
const char *ins_files_why(const struct ins_files_dir *d, int err, char *buf, size_t cap);

/* A new file <dir>/<stem><suffix>, or <dir>/<stem>.XXXXXX<suffix> (random) if that name
 * is taken: INS_FILE_MODE, opened write-only with O_CLOEXEC. Makes dir (ins_files_dir_open).
 * Returns the descriptor and the path in path (cap bytes), *renamed true if the usual
 * name was taken; -1 with errno. */
int ins_files_create(struct ins_files_dir *d, const char *stem, const char *suffix, char *path,
                     size_t cap, bool *renamed);

/* A new temporary file <prefix>XXXXXX (random) in the directory open at dirfd, for an
 * atomic replace by renameat: INS_FILE_MODE, write-only, O_CLOEXEC. Returns the
 * descriptor and its name in name (cap bytes); -1 with errno. */
int ins_files_create_temp(int dirfd, const char *prefix, char *name, size_t cap);

/* Is d's directory (making it if needed) one we can create files in? 0, or -1 with errno. */
int ins_files_dir_writable(struct ins_files_dir *d);

/* Has the file open at fd, created at path, lost every name (deleted while we write, or
 * its directory)? Then what is written to fd reaches no one. One fstat; a path lookup
 * only when the file reports no link, so that a file system that reports none for a
 * file still at its name does not make us start new files. */
bool ins_files_gone(int fd, const char *path);

#endif
