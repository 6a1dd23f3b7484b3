/*
 * files.c - safe creation of directories and files (see files.h).
 */
#include "io/files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Give a directory we just made its mode through a descriptor: if the name was
 * swapped for a link meanwhile, O_NOFOLLOW refuses it; if for someone else's
 * directory, fchmod fails (EPERM). Either way nothing of theirs changes. */
static void set_new_dir_mode(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_uid == geteuid()) (void)fchmod(fd, INS_DIR_MODE);
  close(fd);
}

int ins_files_mkdir_p(const char *dir) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return errno = ENAMETOOLONG, -1;
  for (char *p = path + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char saved = *p;
      *p = '\0';
      if (mkdir(path, INS_DIR_MODE) == 0)
        set_new_dir_mode(path); /* INS_DIR_MODE whatever the umask */
      else if (errno != EEXIST)
        return -1;
      *p = saved;
      if (!saved) break;
    }
  }
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
  return 0;
}

/* mkostemps has made a new file (O_EXCL, mode 0600): it is ours to chmod. */
static int own_new_file(int fd) {
  if (fd >= 0) (void)fchmod(fd, INS_FILE_MODE);
  return fd;
}

int ins_files_create(const char *dir, const char *stem, const char *suffix, char *path,
                    size_t cap, bool *renamed) {
  *renamed = false;
  if (ins_files_mkdir_p(dir) != 0) return -1;
  int n = snprintf(path, cap, "%s/%s%s", dir, stem, suffix);
  if (n < 0 || (size_t)n >= cap) return errno = ENAMETOOLONG, -1;
  /* O_EXCL: fails on any existing name, a link (even a dangling one) included */
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, INS_FILE_MODE);
  if (fd >= 0) return own_new_file(fd);
  if (errno != EEXIST) return -1;
  n = snprintf(path, cap, "%s/%s.XXXXXX%s", dir, stem, suffix);
  if (n < 0 || (size_t)n >= cap) return errno = ENAMETOOLONG, -1;
  *renamed = true;
  return own_new_file(mkostemps(path, (int)strlen(suffix), O_CLOEXEC));
}

int ins_files_create_temp(const char *dir, const char *prefix, char *path, size_t cap) {
  int n = snprintf(path, cap, "%s/%sXXXXXX", dir, prefix);
  if (n < 0 || (size_t)n >= cap) return errno = ENAMETOOLONG, -1;
  return own_new_file(mkostemp(path, O_CLOEXEC));
}

int ins_files_dir_writable(const char *dir) {
  if (ins_files_mkdir_p(dir) != 0) return -1;
  return access(dir, W_OK | X_OK);
}

bool ins_files_gone(int fd, const char *path) {
  struct stat st, at;
  if (fstat(fd, &st) != 0 || st.st_nlink > 0) return false;
  return lstat(path, &at) != 0 || at.st_ino != st.st_ino || at.st_dev != st.st_dev;
}
