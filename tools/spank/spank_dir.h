/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spank_dir.h - making a step's directory safely, before its tasks start.
 *
 * The same approach as the plugin's src/io/files.c (a walk from "/" one component at a time
 * through O_PATH descriptors, openat with O_NOFOLLOW, mkdirat for what is missing, modes and
 * owners set through the descriptor of what was just made, never through a path), with the
 * stricter rule a directory made for someone else's job needs. That file is not reused: it
 * remembers a directory's first making for a process that makes it again and again, and
 * follows any link found at that first making (the user's own /scratch -> /lustre). Here
 * every making is a first one, in a slurmstepd, and the template's text is the site's:
 *  - the components the template spells out (spank_tmpl.h: before the first one with a %x)
 *    may be links a site set up: followed only if root or the job's user owns the link.
 *    They must exist: one made here would be made by (and for) the first job's user, 0755,
 *    and every other user's step would fail in it; the site makes them (1777, like /tmp);
 *  - the components the expansion made (the job's, the step's, the user's name) are never
 *    followed as links, and one that exists must be a directory the job's user owns: a link
 *    or a directory planted at /tmp/inspector-alice by bob is refused, and the step runs
 *    without Inspector (the job itself never fails for it);
 *  - what is made is the job's user's (made as that user, or chowned through its descriptor
 *    when slurmstepd runs us as root), with the given mode whatever the umask.
 */
#ifndef INS_SPANK_DIR_H
#define INS_SPANK_DIR_H

#include <stddef.h>
#include <sys/types.h>

/* Make path (absolute; its first `fixed` components the site's, see the top) for uid/gid.
 * 0, or -1 with errno and what was refused in why (cap bytes). */
int ins_spank_dir_make(const char *path, int fixed, uid_t uid, gid_t gid, mode_t mode, char *why,
                       size_t cap);

#endif
