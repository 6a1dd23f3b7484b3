/* SPDX-License-Identifier: Apache-2.0 */
/*
 * outfile.c - the report's output files, created so that a planted link cannot
 * redirect them (see out.h).
 *
 * Owns: how --csv, --html and --trace open and finish their files. The report
 * often writes next to the logs (docs/deploy.md: report.html in the job's log
 * directory), a directory other users or the job itself may write to. Anyone who
 * can write there could plant groups.csv -> ~/.bashrc and have the report
 * overwrite the target with fopen(path, "w"). The plugin refuses exactly that
 * (src/io/files.c: O_EXCL | O_NOFOLLOW); the report does the same in two steps:
 *
 *   1. a link at the output's name is refused, with an error naming it;
 *   2. the output is written to a new temporary file beside it (mkostemp:
 *      O_CREAT | O_EXCL, so never through a link either) and renamed over the
 *      name when complete. rename() replaces a link planted after step 1 itself,
 *      never its target, and a reader of the name never sees half a file.
 *
 * Not regular files: an existing FIFO or device (a pipe to another program,
 * /dev/null) is written in place, opened O_NOFOLLOW; a rename would replace it.
 * The directory part of a path is the user's choice and is followed, as any
 * program follows it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "out.h"

FILE *rpt_out_open(struct rpt_outfile *o, const char *path) {
  memset(o, 0, sizeof *o);
  o->path = path;
  struct stat st;
  /* "-", /dev/stdout, /dev/stderr: the report's own streams (links under /dev, but to
   * what the user's shell opened, not to a file someone planted) */
  FILE *std = !strcmp(path, "-") || !strcmp(path, "/dev/stdout") ? stdout
              : !strcmp(path, "/dev/stderr")                     ? stderr
                                                                 : NULL;
  if (std) {
    int fd = dup(fileno(std));
    if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
      fprintf(stderr, "inspector-report: cannot write %s: %s\n", path, strerror(errno));
      if (fd >= 0) close(fd);
      return NULL;
    }
    fflush(std);
    return o->f;
  }
  if (lstat(path, &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      fprintf(stderr, "inspector-report: refusing to write %s: it is a symbolic link, and the report never writes "
                      "through one (a link planted there would make it overwrite another file); remove it or name "
                      "another path\n", path);
      return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
      fprintf(stderr, "inspector-report: cannot write %s: %s\n", path, strerror(EISDIR));
      return NULL;
    }
    if (!S_ISREG(st.st_mode)) { /* a FIFO or a device: written in place */
      int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
        fprintf(stderr, "inspector-report: cannot write %s: %s\n", path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
      }
      return o->f;
    }
  }
  const char *slash = strrchr(path, '/');
  int dlen = slash ? (int)(slash - path) + 1 : 0;
  int n = snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.XXXXXX", dlen, path, slash ? slash + 1 : path);
  if (n < 0 || (size_t)n >= sizeof o->tmp) {
    o->tmp[0] = '\0';
    fprintf(stderr, "inspector-report: cannot write %s: %s\n", path, strerror(ENAMETOOLONG));
    return NULL;
  }
  int fd = mkostemp(o->tmp, O_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr, "inspector-report: cannot write %s: %s\n", path, strerror(errno));
    o->tmp[0] = '\0';
    return NULL;
  }
  /* the mode fopen would give (mkostemp makes 0600); the process is single-threaded here */
  mode_t mask = umask(0);
  umask(mask);
  (void)fchmod(fd, 0666 & ~mask);
  if (!(o->f = fdopen(fd, "w"))) {
    fprintf(stderr, "inspector-report: cannot write %s: %s\n", path, strerror(errno));
    close(fd);
    unlink(o->tmp);
    o->tmp[0] = '\0';
    return NULL;
  }
  return o->f;
}

int rpt_out_close(struct rpt_outfile *o, int rc) {
  if (!o->f) return -1;
  bool werr = ferror(o->f) != 0;
  int err = errno;
  if (fclose(o->f) != 0) werr = true, err = errno;
  o->f = NULL;
  if (werr && rc == 0) {
    fprintf(stderr, "inspector-report: cannot write %s: %s\n", o->path, strerror(err));
    rc = -1;
  }
  if (!o->tmp[0]) return rc;
  if (rc == 0 && rename(o->tmp, o->path) != 0) {
    fprintf(stderr, "inspector-report: cannot write %s: %s\n", o->path, strerror(errno));
    rc = -1;
  }
  if (rc != 0) unlink(o->tmp); /* a half-written output never takes the name */
  o->tmp[0] = '\0';
  return rc;
}
