/* SPDX-License-Identifier: Apache-2.0 */
/*
 * files.c - safe creation of directories and files (see files.h).
 *
 * The walk holds O_PATH descriptors: they need only search permission on the
 * directories above (as a path lookup does), where O_RDONLY would need read
 * permission on each (a /lustre/project at 0711 is common), and *at calls take
 * them. Random names are our own (mkostemps takes a path, which would be looked
 * up again from the top).
 */
#include "io/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WALK (O_PATH | O_DIRECTORY | O_CLOEXEC)
#define RANDOM_TRIES 100 /* names taken in a row before giving up (EEXIST) */

/* The calling thread's last refusal, for its message: per thread, since two threads may
 * make one directory at once (files.h) and each names its own. The length of the path's
 * part refused (0: none), not its text: this library's thread-locals live in the static
 * TLS glibc keeps spare for libraries loaded by dlopen (trace mode's initial-exec
 * pointer makes the whole block static), a few hundred bytes for all of them. */
static _Thread_local size_t t_refused;

static bool known(const struct ins_files_dir *d) {
  return atomic_load_explicit(&d->state, memory_order_acquire) == INS_DIR_KNOWN;
}

void ins_files_dir_set(struct ins_files_dir *d, const char *path) {
  if (known(d) && !strcmp(d->path, path)) return;
  snprintf(d->path, sizeof d->path, "%s", path);
  atomic_store(&d->state, INS_DIR_UNMADE);
  d->nlinks = 0;
}

const char *ins_files_why(const struct ins_files_dir *d, int err, char *buf, size_t cap) {
  if (err != ELOOP || !t_refused) return strerror(err);
  snprintf(buf, cap, "'%.*s' is a symbolic link that was not there, or led elsewhere, when "
           "the directory was first made: not followed", (int)t_refused, d->path);
  return buf;
}

/* Refuse the component that ends `len` bytes into the path: -1, errno ELOOP. */
static int refuse(struct ins_files_dir *d, size_t len) {
  (void)d;
  t_refused = len;
  return errno = ELOOP, -1;
}

/* A directory we just made, open at fd (O_RDONLY: fchmod needs more than O_PATH): its
 * mode whatever the umask, unless it turns out to be someone else's. */
static void own_new_dir(int fd) {
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_uid == geteuid()) (void)fchmod(fd, INS_DIR_MODE);
}

/* The walk's state: the links met, kept as d's memory if this is its first making. */
struct walk {
  int nlinks;
  struct { uint32_t comp; dev_t dev; ino_t ino; } link[INS_FILES_MAX_LINKS];
};

static bool remembered(const struct ins_files_dir *d, uint32_t comp, const struct stat *st) {
  for (int i = 0; i < d->nlinks; i++)
    if (d->link[i].comp == comp) return d->link[i].dev == st->st_dev && d->link[i].ino == st->st_ino;
  return false;
}

/* Through the link `name` in fd: a descriptor of the directory it leads to, if this is
 * d's first making (the link remembered in w) or the link led there at the first. */
static int through_link(struct ins_files_dir *d, struct walk *w, int fd, const char *name,
                        uint32_t comp, size_t len) {
  int next = openat(fd, name, WALK), e;
  struct stat st;
  if (next < 0) return -1;
  if (fstat(next, &st) != 0) goto fail;
  if (known(d)) {
    if (remembered(d, comp, &st)) return next;
    close(next);
    return refuse(d, len);
  }
  if (w->nlinks == INS_FILES_MAX_LINKS) {
    errno = ELOOP;
    goto fail;
  }
  w->link[w->nlinks].comp = comp;
  w->link[w->nlinks].dev = st.st_dev;
  w->link[w->nlinks++].ino = st.st_ino;
  return next;
fail:
  e = errno;
  close(next);
  return errno = e, -1;
}

/* Component `name` (the comp'th of d's path, which ends `len` bytes in) in the directory
 * open at fd: a descriptor of it, made if missing. -1 with errno. */
static int step(struct ins_files_dir *d, struct walk *w, int fd, const char *name, uint32_t comp,
                size_t len, bool make) {
  for (int tries = 0; tries < 3; tries++) { /* it may change while we look: look again */
    int next = openat(fd, name, WALK | O_NOFOLLOW);
    if (next >= 0) return next;
    if (errno == ENOENT && make) {
      if (mkdirat(fd, name, INS_DIR_MODE) != 0) {
        if (errno == EEXIST) continue; /* made meanwhile: what is it? */
        return -1;
      }
      /* ours: a link in its place now was planted since (refused even at the first making) */
      next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next >= 0) {
        own_new_dir(next);
        return next;
      }
      if (errno == EACCES) return openat(fd, name, WALK | O_NOFOLLOW); /* a umask of 04xx */
      return errno == ELOOP || errno == ENOTDIR ? refuse(d, len) : -1;
    }
    if (errno != ENOTDIR && errno != ELOOP) return -1; /* ENOENT when not making */
    struct stat ls;
    if (fstatat(fd, name, &ls, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return -1;
    }
    if (!S_ISLNK(ls.st_mode)) return errno = ENOTDIR, -1; /* a file, or anything else */
    return through_link(d, w, fd, name, comp, len);
  }
  return errno = EAGAIN, -1;
}

int ins_files_dir_open(struct ins_files_dir *d, bool make) {
  t_refused = 0;
  const char *p = d->path;
  if (!*p) return errno = ENOENT, -1;
  int fd = open(*p == '/' ? "/" : ".", WALK);
  if (fd < 0) return -1;
  struct walk w = {.nlinks = 0};
  char name[NAME_MAX + 1];
  for (uint32_t comp = 0;; comp++) {
    while (*p == '/') p++;
    if (!*p) break;
    size_t n = strcspn(p, "/");
    if (n > NAME_MAX) {
      close(fd);
      return errno = ENAMETOOLONG, -1;
    }
    memcpy(name, p, n);
    name[n] = '\0';
    p += n;
    int next = step(d, &w, fd, name, comp, (size_t)(p - d->path), make), e = errno;
    close(fd);
    if (next < 0) return errno = e, -1;
    fd = next;
  }
  /* The first making to get here is remembered: only it writes what others read once it is
   * known (a making that lost the race was walked as a first one too, and found the same,
   * or what a link planted between the two led to: the winner's is kept). A fork between
   * the claim and the mark leaves it unmade in the child: its makings stay first ones. */
  int unmade = INS_DIR_UNMADE;
  if (atomic_compare_exchange_strong(&d->state, &unmade, INS_DIR_RECORDING)) {
    d->nlinks = w.nlinks;
    memcpy(d->link, w.link, sizeof w.link);
    atomic_store_explicit(&d->state, INS_DIR_KNOWN, memory_order_release);
  }
  return fd;
}

/* Six characters no one can guess ahead of time (as mkstemp's XXXXXX). */
static void random_name(char *x) {
  static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char r[6];
  if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
    /* no entropy yet (early boot): the clock, our pid and a counter, mixed */
    static _Atomic uint64_t n;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t v = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 48 ^ n++;
    v *= 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 6; i++) r[i] = (unsigned char)(v >> (8 * i + 13));
  }
  for (int i = 0; i < 6; i++) x[i] = set[r[i] % (sizeof set - 1)];
}

/* A new file `name` in dirfd (O_EXCL refuses any existing name, a link, even a dangling
 * one, included), its mode set through its descriptor. */
static int create_at(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, INS_FILE_MODE);
  if (fd >= 0) (void)fchmod(fd, INS_FILE_MODE); /* whatever the umask: ours, just made */
  return fd;
}

/* name: head + "XXXXXX" + tail, the X's random, created new in dirfd (tried again while
 * the name is taken). */
static int create_random(int dirfd, char *name, size_t cap, const char *head, const char *tail) {
  int n = snprintf(name, cap, "%sXXXXXX%s", head, tail);
  if (n < 0 || (size_t)n >= cap) return errno = ENAMETOOLONG, -1;
  for (int i = 0; i < RANDOM_TRIES; i++) {
    random_name(name + strlen(head));
    int fd = create_at(dirfd, name);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return errno = EEXIST, -1;
}

int ins_files_create(struct ins_files_dir *d, const char *stem, const char *suffix, char *path,
                     size_t cap, bool *renamed) {
  *renamed = false;
  char name[NAME_MAX + 1], head[NAME_MAX + 1];
  /* the random name is 7 bytes longer (.XXXXXX): said now, before anything is made */
  int n = snprintf(name, sizeof name, "%s.XXXXXX%s", stem, suffix);
  if (n < 0 || (size_t)n >= sizeof name || strlen(d->path) + 1 + (size_t)n >= cap)
    return errno = ENAMETOOLONG, -1;
  snprintf(name, sizeof name, "%s%s", stem, suffix);
  int dfd = ins_files_dir_open(d, true);
  if (dfd < 0) return -1;
  int fd = create_at(dfd, name);
  if (fd < 0 && errno == EEXIST) {
    *renamed = true;
    snprintf(head, sizeof head, "%s.", stem);
    fd = create_random(dfd, name, sizeof name, head, suffix);
  }
  int e = errno;
  close(dfd);
  if (fd < 0) return errno = e, -1;
  snprintf(path, cap, "%s/%s", d->path, name);
  return fd;
}

int ins_files_create_temp(int dirfd, const char *prefix, char *name, size_t cap) {
  return create_random(dirfd, name, cap, prefix, "");
}

int ins_files_dir_writable(struct ins_files_dir *d) {
  int dfd = ins_files_dir_open(d, true);
  if (dfd < 0) return -1;
  int rc = faccessat(dfd, ".", W_OK | X_OK, 0), e = errno;
  close(dfd);
  return rc == 0 ? 0 : (errno = e, -1);
}

bool ins_files_gone(int fd, const char *path) {
  struct stat st, at;
  if (fstat(fd, &st) != 0 || st.st_nlink > 0) return false;
  return lstat(path, &at) != 0 || at.st_ino != st.st_ino || at.st_dev != st.st_dev;
}
