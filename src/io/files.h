/*
 * files.h - creating the plugin's directories and files safely: the JSON log
 * (sink/json/writer.c), the Prometheus files (sink/prom/prom_file.c) and trace
 * mode's file (abi/trace.c). In io/, below all of them; it uses nothing of ours.
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
 *  - directories that already exist (links the user set up included) are
 *    used as they are, and never chmodded;
 *  - a file deleted while we write it (or its directory) is noticed
 *    (ins_files_gone), and its writer creates a new one by these rules.
 */
#ifndef INS_FILES_H
#define INS_FILES_H

#include <stdbool.h>
#include <stddef.h>

#define INS_DIR_MODE 0755
#define INS_FILE_MODE 0644

/* Create dir and its missing parents (each new one INS_DIR_MODE). 0, or -1 with errno
 * (ENOTDIR if dir exists but is not a directory). */
int ins_files_mkdir_p(const char *dir);

/* A new file <dir>/<stem><suffix>, or <dir>/<stem>.XXXXXX<suffix> (random) if that name
 * is taken: INS_FILE_MODE, opened write-only with O_CLOEXEC. Creates dir if needed.
 * Returns the descriptor and the path in path (cap bytes), *renamed true if the usual
 * name was taken; -1 with errno. */
int ins_files_create(const char *dir, const char *stem, const char *suffix, char *path,
                    size_t cap, bool *renamed);

/* A new temporary file <dir>/<prefix>XXXXXX (random) for an atomic replace by rename:
 * INS_FILE_MODE, write-only, O_CLOEXEC. Returns the descriptor; -1 with errno. */
int ins_files_create_temp(const char *dir, const char *prefix, char *path, size_t cap);

/* Is dir (creating it if needed) a directory we can create files in? 0, or -1 with errno. */
int ins_files_dir_writable(const char *dir);

/* Has the file open at fd, created at path, lost every name (deleted while we write, or
 * its directory)? Then what is written to fd reaches no one. One fstat; a path lookup
 * only when the file reports no link, so that a file system that reports none for a
 * file still at its name does not make us start new files. */
bool ins_files_gone(int fd, const char *path);

#endif
