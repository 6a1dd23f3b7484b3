/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_spank_dir.c - making a step's directory (tools/spank/spank_dir.c), one behaviour per
 * case: inspector-unit-spank_dir --list | --case NAME.
 *
 * The job's user is "nobody" when the test runs as root (the directories made are chowned
 * to it through their descriptors, as slurmstepd's root would), else the test's own user.
 * The cases that need a third user's files (a directory or a link someone else owns) need
 * root to make them: without it they exit 77 (skipped). Each case builds its tree in a
 * mkdtemp directory of its own, whose components are the site's part of the path:
 *   <base>/...             the template's fixed part (the site's)
 *   <base>/<user>/<job>    the expanded part (the step's own)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cases.h"
#include "check.h"
#include "spank_dir.h"

#define SKIP CASE_SKIP
#define OTHER_UID 12345 /* a third user: owns what a case plants */
#define OTHER_GID 12345

static uid_t g_uid; /* the job's user */
static gid_t g_gid;
static char g_base[64];
static int g_base_comps; /* components of g_base: the site's part */

static void setup(void) {
  if (geteuid() == 0) {
    struct passwd *pw = getpwnam("nobody");
    g_uid = pw ? pw->pw_uid : 65534;
    g_gid = pw ? pw->pw_gid : 65534;
  } else {
    g_uid = getuid();
    g_gid = getgid();
  }
  snprintf(g_base, sizeof g_base, "/tmp/ins-spank-dir-XXXXXX");
  if (!mkdtemp(g_base)) {
    perror("mkdtemp");
    exit(1);
  }
  g_base_comps = 2; /* tmp, ins-spank-dir-XXXXXX */
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_base);
  CHECK(system(cmd) == 0);
}

static char *at(const char *rel) { /* <base>/rel, in one of a few rotating buffers */
  static char bufs[8][256];
  static int n;
  char *b = bufs[n++ % 8];
  snprintf(b, sizeof bufs[0], "%s/%s", g_base, rel);
  return b;
}

/* A directory at path, the job's user's, with mode exactly `mode`. */
static bool is_users_dir(const char *path, mode_t mode) {
  struct stat st;
  if (lstat(path, &st) != 0) return fprintf(stderr, "  %s: missing\n", path), false;
  bool ok = S_ISDIR(st.st_mode) && st.st_uid == g_uid && st.st_gid == g_gid && (st.st_mode & 07777) == mode;
  if (!ok)
    fprintf(stderr, "  %s: mode %o uid %u gid %u (want dir %o %u %u)\n", path, (unsigned)st.st_mode,
            (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned)mode, (unsigned)g_uid, (unsigned)g_gid);
  return ok;
}

static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static int empty_dir(const char *path) { /* 1 if path is a directory with nothing in it */
  char cmd[512];
  snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", path);
  return system(cmd) == 0;
}

static int make(const char *path, int fixed, char *why, size_t cap) {
  why[0] = '\0';
  errno = 0;
  return ins_spank_dir_make(path, fixed, g_uid, g_gid, 0755, why, cap);
}

/* ---- cases ---- */

/* The expanded components made, each the job's user's, 0755 whatever the umask. */
static int case_makes_new(void) {
  char why[512];
  mode_t old = umask(077);
  int r = make(at("alice/42.0"), g_base_comps, why, sizeof why);
  umask(old);
  CHECK_EQ_U(r, 0);
  CHECK_STR(why, "");
  CHECK(is_users_dir(at("alice"), 0755));
  CHECK(is_users_dir(at("alice/42.0"), 0755));
  /* a next step in the same user directory: the existing one used, the new one made */
  CHECK_EQ_U(make(at("alice/42.1"), g_base_comps, why, sizeof why), 0);
  CHECK(is_users_dir(at("alice/42.1"), 0755));
  /* the same step again (another node sharing the file system): found, fine */
  CHECK_EQ_U(make(at("alice/42.1"), g_base_comps, why, sizeof why), 0);
  /* the user's own directory of another mode is used as it is */
  CHECK(chmod(at("alice/42.1"), 0700) == 0);
  CHECK_EQ_U(make(at("alice/42.1"), g_base_comps, why, sizeof why), 0);
  return 0;
}

/* A link where the step's own directory goes is never followed, whoever owns it. */
static int case_planted_link(void) {
  char why[512];
  CHECK(mkdir(at("elsewhere"), 0777) == 0);
  CHECK(symlink(at("elsewhere"), at("alice")) == 0);
  CHECK_EQ_U(make(at("alice/42.0"), g_base_comps, why, sizeof why), (unsigned long long)-1);
  CHECK_EQ_U(errno, ELOOP);
  char want[512];
  snprintf(want, sizeof want, "'%s' is a symbolic link where the step's own directory goes: not followed",
           at("alice"));
  CHECK_STR(why, want);
  CHECK(empty_dir(at("elsewhere")));
  /* the last component a link, owned by the job's user, to the user's own directory */
  CHECK(mkdir(at("bob"), 0755) == 0 && chown(at("bob"), g_uid, g_gid) == 0);
  CHECK(mkdir(at("bobs-own"), 0755) == 0 && chown(at("bobs-own"), g_uid, g_gid) == 0);
  CHECK(symlink(at("bobs-own"), at("bob/42.0")) == 0);
  if (geteuid() == 0) CHECK(lchown(at("bob/42.0"), g_uid, g_gid) == 0);
  CHECK_EQ_U(make(at("bob/42.0"), g_base_comps, why, sizeof why), (unsigned long long)-1);
  CHECK_EQ_U(errno, ELOOP);
  CHECK(empty_dir(at("bobs-own")));
  return 0;
}

/* A directory someone else owns where the step's own goes: refused, nothing made in it. */
static int case_foreign_dir(void) {
  if (geteuid() != 0) return SKIP;
  char why[512], want[512];
  CHECK(mkdir(at("alice"), 0777) == 0 && chmod(at("alice"), 0777) == 0);
  CHECK(chown(at("alice"), OTHER_UID, OTHER_GID) == 0);
  CHECK_EQ_U(make(at("alice/42.0"), g_base_comps, why, sizeof why), (unsigned long long)-1);
  CHECK_EQ_U(errno, EPERM);
  snprintf(want, sizeof want, "'%s' exists and is not the job user's directory: not used", at("alice"));
  CHECK_STR(why, want);
  CHECK(empty_dir(at("alice")));
  /* root's too: only the job's user's will do */
  CHECK(mkdir(at("root-made"), 0755) == 0);
  CHECK_EQ_U(make(at("root-made/42.0"), g_base_comps, why, sizeof why), (unsigned long long)-1);
  CHECK_EQ_U(errno, EPERM);
  CHECK(empty_dir(at("root-made")));
  return 0;
}

/* The site's part: a link root or the job's user owns is followed; another user's is not. */
static int case_site_links(void) {
  if (geteuid() != 0) return SKIP;
  char why[512], want[512];
  CHECK(mkdir(at("lustre"), 01777) == 0 && chmod(at("lustre"), 01777) == 0);
  /* root's link: <base>/scratch -> <base>/lustre; the site's part is base + scratch */
  CHECK(symlink(at("lustre"), at("scratch")) == 0);
  CHECK_EQ_U(make(at("scratch/alice/1.0"), g_base_comps + 1, why, sizeof why), 0);
  CHECK_STR(why, "");
  CHECK(is_users_dir(at("lustre/alice/1.0"), 0755));
  /* the job's user's own link */
  CHECK(symlink(at("lustre"), at("mine")) == 0 && lchown(at("mine"), g_uid, g_gid) == 0);
  CHECK_EQ_U(make(at("mine/alice/1.1"), g_base_comps + 1, why, sizeof why), 0);
  CHECK(is_users_dir(at("lustre/alice/1.1"), 0755));
  /* a third user's link */
  CHECK(symlink(at("lustre"), at("theirs")) == 0 && lchown(at("theirs"), OTHER_UID, OTHER_GID) == 0);
  CHECK_EQ_U(make(at("theirs/carol/2.0"), g_base_comps + 1, why, sizeof why), (unsigned long long)-1);
  CHECK_EQ_U(errno, ELOOP);
  snprintf(want, sizeof want, "'%s' is a symbolic link owned by another user: not followed", at("theirs"));
  CHECK_STR(why, want);
  CHECK(!exists(at("lustre/carol")));
  /* the same root-owned link, but where the step's own part starts: not followed */
  CHECK_EQ_U(make(at("scratch/dave/3.0"), g_base_comps, why, sizeof why), (unsigned long long)-1);
  CHECK_EQ_U(errno, ELOOP);
  CHECK(!exists(at("lustre/dave")));
  return 0;
}

/* The site's part must exist: one made here would be the first job user's (spank_dir.h). */
static int case_site_missing(void) {
  char why[512], want[512];
  CHECK_EQ_U(make(at("inspector/alice/1.0"), g_base_comps + 1, why, sizeof why), (unsigned long long)-1);
  CHECK_EQ_U(errno, ENOENT);
  snprintf(want, sizeof want, "'%s' does not exist: the template's fixed part is the site's to make "
           "(not made for a job)", at("inspector"));
  CHECK_STR(why, want);
  CHECK(!exists(at("inspector")));
  /* made by the site: used */
  CHECK(mkdir(at("inspector"), 01777) == 0);
  CHECK_EQ_U(make(at("inspector/alice/1.0"), g_base_comps + 1, why, sizeof why), 0);
  CHECK(is_users_dir(at("inspector/alice/1.0"), 0755));
  return 0;
}

/* A file where a directory goes, in either part. */
static int case_not_a_directory(void) {
  char why[512], want[512];
  int fd = open(at("file"), O_WRONLY | O_CREAT | O_EXCL, 0644);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  if (geteuid() == 0) CHECK(chown(at("file"), g_uid, g_gid) == 0);
  for (int site = 0; site < 2; site++) {
    CHECK_EQ_U(make(at("file/1.0"), g_base_comps + site, why, sizeof why), (unsigned long long)-1);
    CHECK_EQ_U(errno, ENOTDIR);
    snprintf(want, sizeof want, "'%s' is not a directory", at("file"));
    CHECK_STR(why, want);
  }
  return 0;
}

/* Paths it cannot walk: relative, a component longer than NAME_MAX, longer than PATH_MAX. */
static int case_bad_paths(void) {
  static char why[PATH_MAX + 128];
  CHECK_EQ_U(make("tmp/x", 0, why, sizeof why), (unsigned long long)-1);
  CHECK_EQ_U(errno, EINVAL);
  CHECK_STR(why, "'tmp/x' is not an absolute path");
  static char longname[NAME_MAX + 2], path[PATH_MAX + 8];
  memset(longname, 'n', NAME_MAX + 1);
  snprintf(path, sizeof path, "%s/%s", g_base, longname);
  CHECK_EQ_U(make(path, g_base_comps, why, sizeof why), (unsigned long long)-1);
  CHECK_EQ_U(errno, ENAMETOOLONG);
  char want[PATH_MAX + 64];
  snprintf(want, sizeof want, "a component of '%s' is too long", path);
  CHECK_STR(why, want);
  CHECK(empty_dir(g_base));
  /* NAME_MAX exactly is a name */
  longname[NAME_MAX] = '\0';
  snprintf(path, sizeof path, "%s/%s", g_base, longname);
  CHECK_EQ_U(make(path, g_base_comps, why, sizeof why), 0);
  memset(path, 'a', PATH_MAX);
  path[0] = '/';
  path[PATH_MAX] = '\0';
  CHECK_EQ_U(make(path, 0, why, sizeof why), (unsigned long long)-1);
  CHECK_EQ_U(errno, EINVAL);
  /* a short message buffer: cut, still a string */
  char small[8];
  memset(small, 'x', sizeof small);
  CHECK_EQ_U(ins_spank_dir_make("relative", 0, g_uid, g_gid, 0755, small, sizeof small), (unsigned long long)-1);
  CHECK_EQ_U(strlen(small), sizeof small - 1);
  return 0;
}

static const struct unit_case g_cases[] = {
    {"makes_new", case_makes_new},         {"planted_link", case_planted_link},
    {"foreign_dir", case_foreign_dir},     {"site_links", case_site_links},
    {"site_missing", case_site_missing},   {"not_a_directory", case_not_a_directory},
    {"bad_paths", case_bad_paths},
};

int main(int argc, char **argv) {
  return run_cases(argc, argv, g_cases, sizeof g_cases / sizeof *g_cases, setup, teardown, "spank_dir",
                   "needs root to plant another user's files");
}
