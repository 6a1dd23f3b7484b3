/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spank_dir.c - making a step's directory safely (see spank_dir.h).
 */
#include "spank_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WALK (O_PATH | O_DIRECTORY | O_CLOEXEC)

/* A directory just made in fd as `name`: the user's, with mode, through its descriptor. */
static int own_new(int fd, const char *name, uid_t uid, gid_t gid, mode_t mode) {
  int d = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), e;
  struct stat st;
  if (d < 0) return -1; /* a link in its place already: planted since, ELOOP */
  if (fstat(d, &st) != 0) goto fail;
  if (st.st_uid != uid) {
    if (geteuid() != 0 || fchown(d, uid, gid) != 0) goto fail;
  }
  if (fchmod(d, mode) != 0) goto fail;
  return d;
fail:
  e = errno;
  close(d);
  return errno = e, -1;
}

/* Component `name` in fd: a descriptor of it (O_PATH or O_RDONLY), or -1 with why. */
static int step(int fd, const char *name, const char *shown, bool site, uid_t uid, gid_t gid,
                mode_t mode, char *why, size_t cap) {
  for (int tries = 0; tries < 3; tries++) { /* it may change while we look */
    int next = openat(fd, name, WALK | O_NOFOLLOW);
    struct stat st;
    if (next >= 0) {
      if (site) return next;
      if (fstat(next, &st) == 0 && st.st_uid == uid) return next;
      close(next);
      snprintf(why, cap, "'%s' exists and is not the job user's directory: not used", shown);
      return errno = EPERM, -1;
    }
    if (errno == ENOENT) {
      if (site) { /* made by the first job's user, it would be theirs: closed to the next */
        snprintf(why, cap, "'%s' does not exist: the template's fixed part is the site's to make "
                 "(not made for a job)", shown);
        return errno = ENOENT, -1;
      }
      if (mkdirat(fd, name, mode) != 0) {
        if (errno == EEXIST) continue; /* another task, or node, made it meanwhile */
        snprintf(why, cap, "cannot make '%s': %s", shown, strerror(errno));
        return -1;
      }
      next = own_new(fd, name, uid, gid, mode);
      if (next < 0) snprintf(why, cap, "'%s' was made, then could not be the job user's: %s",
                             shown, strerror(errno));
      return next;
    }
    if (errno != ELOOP && errno != ENOTDIR) {
      snprintf(why, cap, "cannot open '%s': %s", shown, strerror(errno));
      return -1;
    }
    if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISLNK(st.st_mode)) {
      snprintf(why, cap, "'%s' is not a directory", shown);
      return errno = ENOTDIR, -1;
    }
    if (!site || (st.st_uid != 0 && st.st_uid != uid)) {
      snprintf(why, cap, "'%s' is a symbolic link %s: not followed", shown,
               site ? "owned by another user" : "where the step's own directory goes");
      return errno = ELOOP, -1;
    }
    next = openat(fd, name, WALK); /* the site's link, followed */
    if (next < 0) snprintf(why, cap, "cannot follow '%s': %s", shown, strerror(errno));
    return next;
  }
  snprintf(why, cap, "'%s' kept changing while it was made", shown);
  return errno = EAGAIN, -1;
}

int ins_spank_dir_make(const char *path, int fixed, uid_t uid, gid_t gid, mode_t mode, char *why,
                       size_t cap) {
  char name[NAME_MAX + 1], shown[PATH_MAX];
  const char *p = path;
  if (*p != '/' || strlen(path) >= sizeof shown) {
    snprintf(why, cap, "'%s' is not an absolute path", path);
    return errno = EINVAL, -1;
  }
  int fd = open("/", WALK);
  if (fd < 0) return snprintf(why, cap, "cannot open /: %s", strerror(errno)), -1;
  for (int comp = 0;; comp++) {
    while (*p == '/') p++;
    if (!*p) break;
    size_t n = strcspn(p, "/");
    if (n > NAME_MAX) {
      close(fd);
      snprintf(why, cap, "a component of '%s' is too long", path);
      return errno = ENAMETOOLONG, -1;
    }
    memcpy(name, p, n);
    name[n] = '\0';
    p += n;
    snprintf(shown, sizeof shown, "%.*s", (int)(p - path), path);
    int next = step(fd, name, shown, comp < fixed, uid, gid, mode, why, cap), e = errno;
    close(fd);
    if (next < 0) return errno = e, -1;
    fd = next;
  }
  close(fd);
  return 0;
}
