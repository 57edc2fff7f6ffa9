/* spank-ext-cache: the per-node tree <base>/<uid>/<job>/<leaf>, made and removed safely as root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_ident.h"
#include "fs_tree.h"
#include "layout.h"
#include "text.h"

#define SKELETON_MODE 0711	/* traversable, not listable: users cannot see each other's jobs */
#define LEAF_MODE 0700
#define TRASH_MODE 0700
#define LEVEL_RETRIES 64	/* bounded, but far above what racing epilogs can cause */
/* removal on a step's or an epilog's own path: the user may re-populate the tree forever */
#define CRITICAL_REMOVE_BUDGET_NS (10ull * 1000000000ull)

/*
 * The caller's removal limits, or the default ones with a deadline: no
 * removal may run unbounded where a job or the node waits for it.
 */
static const struct extc_rm_limits *bounded_limits(const struct extc_fs_policy *pol,
						   struct extc_rm_limits *buf)
{
	if (pol->rm_limits != NULL)
		return (pol->rm_limits);
	extc_rm_limits_default(buf);
	buf->deadline_ns = extc_monotonic_ns() + CRITICAL_REMOVE_BUDGET_NS;
	return (buf);
}

/* Everything a walk down the tree holds; closed in one place. */
struct tree_fds {
	int base, node, uid, job;
	char path[PATH_MAX];	/* path of the deepest level opened, for messages */
};

static void tree_fds_init(struct tree_fds *t)
{
	t->base = t->node = t->uid = t->job = -1;
	t->path[0] = '\0';
}

static void tree_fds_close(struct tree_fds *t)
{
	int *fds[] = { &t->job, &t->uid, &t->node, &t->base };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

void extc_fs_policy_root(struct extc_fs_policy *pol, const struct extc_config *cfg,
			 const char *node_name)
{
	pol->owner = 0;
	pol->owner_gid = 0;
	pol->node_name = cfg->allow_shared_fs ? node_name : NULL;
	pol->rm_limits = NULL;
	pol->job_private = false;
	pol->job_uid = 0;
}

/*
 * Why openat(O_DIRECTORY|O_NOFOLLOW) failed, in words: Linux says ENOTDIR
 * rather than ELOOP for a symlink, so the entry itself is looked at.
 */
static const char *open_error(int parentfd, const char *name, int err)
{
	struct stat sb;

	if (err == ELOOP)
		return ("is a symbolic link");
	if (err == ENOTDIR) {
		if (fstatat(parentfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode))
			return ("is a symbolic link");
		return ("is not a directory");
	}
	return (strerror(err));
}

/* A level the plugin owns: a directory, ours, not writable by anyone else. */
static int check_skeleton(const struct extc_ident *id, const struct extc_fs_policy *pol,
			  const char *path, char *why, size_t whylen)
{
	if (!S_ISDIR(id->mode)) {
		extc_fmt(why, whylen, "%s: is not a directory; refusing to use it", path);
		return (-1);
	}
	if (id->uid != pol->owner || (id->mode & 022) != 0) {
		extc_fmt(why, whylen,
			 "%s: owned by uid %u with mode %04o, expected uid %u and no group/other write; "
			 "refusing to use or repair it (a user may have created it)",
			 path, (unsigned)id->uid, (unsigned)(id->mode & 07777), (unsigned)pol->owner);
		return (-1);
	}
	/* without search permission for others no job could reach its directory below */
	if ((id->mode & 0111) != 0111) {
		extc_fmt(why, whylen,
			 "%s: mode %04o does not let users pass through it (expected %04o); "
			 "refusing to use it",
			 path, (unsigned)(id->mode & 07777), (unsigned)SKELETON_MODE);
		return (-1);
	}
	return (0);
}

/* Above the base: owned by root (or the policy owner), writable by others only if sticky. */
static int check_ancestor(const struct extc_ident *id, const struct extc_fs_policy *pol,
			  const char *path, char *why, size_t whylen)
{
	if (pol->job_private && id->uid == pol->job_uid)
		return (0);
	if ((id->uid != 0 && id->uid != pol->owner) ||
	    ((id->mode & 022) != 0 && (id->mode & S_ISVTX) == 0)) {
		extc_fmt(why, whylen,
			 "%s: owned by uid %u with mode %04o: a directory above the base must be "
			 "root-owned and not writable by others (sticky excepted)",
			 path[0] ? path : "/", (unsigned)id->uid, (unsigned)(id->mode & 07777));
		return (-1);
	}
	return (0);
}

/*
 * Open (and with 'create', make) a skeleton level below a verified parent.
 * Returns 1 when the level does not exist and 'create' is false. A NULL
 * 'parent_id' skips the mount check (the base itself may be a mount point).
 */
static int open_level(int parentfd, const struct extc_ident *parent_id, const char *name,
		      bool create, const struct extc_fs_policy *pol, char *path, size_t pathlen,
		      int *out, char *why, size_t whylen)
{
	struct extc_ident id;
	bool created = false;
	size_t plen = strlen(path);
	int attempt;
	int fd = -1;
	int rv = -1;

	if (extc_fmt(path + plen, pathlen - plen, "/%s", name) < 0) {
		extc_fmt(why, whylen, "%s: path too long", path);
		goto out;
	}
	/* another job's epilog may drop an empty level between our mkdir and open */
	for (attempt = 0; attempt < LEVEL_RETRIES; attempt++) {
		if (create) {
			if (mkdirat(parentfd, name, SKELETON_MODE) == 0)
				created = true;
			else if (errno != EEXIST) {
				extc_fmt(why, whylen, "%s: cannot create: %s", path, strerror(errno));
				goto out;
			}
		}
		fd = openat(parentfd, name, EXTC_DIR_OPEN_FLAGS);
		if (fd >= 0 || errno != ENOENT || !create)
			break;
	}
	if (fd < 0) {
		if (errno == ENOENT && !create) {
			rv = 1;
			goto out;
		}
		extc_fmt(why, whylen, "%s: cannot open: %s", path, open_error(parentfd, name, errno));
		goto out;
	}
	if (extc_ident_fd(fd, &id) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat: %s", path, strerror(errno));
		goto out;
	}
	if (created) {
		/* exact owner and mode whatever the umask or a setgid parent did */
		if (fchown(fd, pol->owner, pol->owner_gid) < 0 ||
		    fchmod(fd, SKELETON_MODE) < 0 || extc_ident_fd(fd, &id) < 0) {
			extc_fmt(why, whylen, "%s: cannot set owner and mode: %s", path,
				 strerror(errno));
			goto out;
		}
	}
	if (check_skeleton(&id, pol, path, why, whylen) < 0)
		goto out;
	if (parent_id != NULL && !extc_ident_same_mount(&id, parent_id)) {
		extc_fmt(why, whylen, "%s: is a mount point; refusing to cross it", path);
		goto out;
	}
	*out = fd;
	fd = -1;
	rv = 0;
out:
	if (fd >= 0)
		close(fd);
	/*
	 * A level made here and then refused would be accepted half-made by
	 * the next step (wrong mode, wrong owner). It is still empty: only
	 * root can write in it, so rmdir by name removes exactly what we made.
	 */
	if (rv < 0 && created)
		unlinkat(parentfd, name, AT_REMOVEDIR);
	return (rv);
}

/*
 * Walk from "/" to the base one component at a time with O_NOFOLLOW, so a
 * symlink anywhere on the way is refused rather than followed (O_NOFOLLOW
 * on a whole path guards only its last component).
 */
static int open_base(const char *base, bool create, const struct extc_fs_policy *pol,
		     char *path, size_t pathlen, int *out, char *why, size_t whylen)
{
	char copy[EXTC_BASE_MAX + 1];
	struct extc_ident id;
	char *save = NULL, *comp, *next;
	int fd, nfd;
	int rv = -1;

	path[0] = '\0';
	if (extc_fmt(copy, sizeof(copy), "%s", base) < 0) {
		extc_fmt(why, whylen, "base is too long");
		return (-1);
	}
	fd = open("/", EXTC_DIR_OPEN_FLAGS);
	if (fd < 0 || extc_ident_fd(fd, &id) < 0) {
		extc_fmt(why, whylen, "/: cannot open: %s", strerror(errno));
		goto out;
	}
	if (check_ancestor(&id, pol, path, why, whylen) < 0)
		goto out;
	comp = strtok_r(copy, "/", &save);
	for (next = strtok_r(NULL, "/", &save); next != NULL; next = strtok_r(NULL, "/", &save)) {
		size_t plen = strlen(path);

		extc_fmt(path + plen, pathlen - plen, "/%s", comp);
		nfd = openat(fd, comp, EXTC_DIR_OPEN_FLAGS);
		if (nfd < 0) {
			rv = (errno == ENOENT && !create) ? 1 : -1;
			if (rv < 0)
				extc_fmt(why, whylen, "%s: cannot open: %s", path,
					 open_error(fd, comp, errno));
			goto out;
		}
		close(fd);
		fd = nfd;
		if (extc_ident_fd(fd, &id) < 0) {
			extc_fmt(why, whylen, "%s: cannot stat: %s", path, strerror(errno));
			goto out;
		}
		if (check_ancestor(&id, pol, path, why, whylen) < 0)
			goto out;
		comp = next;
	}
	rv = open_level(fd, NULL, comp, create, pol, path, pathlen, out, why, whylen);
out:
	if (fd >= 0)
		close(fd);
	return (rv);
}

/* Base (refusing a network filesystem unless allowed) and the node level if any. */
static int open_top(const struct extc_config *cfg, const struct extc_fs_policy *pol, bool create,
		    struct tree_fds *t, char *why, size_t whylen)
{
	struct extc_ident base_id;
	const char *fstype;
	bool network;
	int rv;

	rv = open_base(cfg->base, create, pol, t->path, sizeof(t->path), &t->base, why, whylen);
	if (rv != 0)
		return (rv);
	if (extc_fs_is_network(t->base, &network, &fstype) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat the filesystem: %s", t->path, strerror(errno));
		return (-1);
	}
	if (network && !cfg->allow_shared_fs) {
		extc_fmt(why, whylen,
			 "%s: is on %s, a network or cluster filesystem shared between nodes; "
			 "use node-local storage or set allow_shared_fs=yes", t->path, fstype);
		return (-1);
	}
	if (pol->node_name == NULL) {
		t->node = dup(t->base);
		if (t->node < 0) {
			extc_fmt(why, whylen, "%s: cannot duplicate its descriptor: %s", t->path,
				 strerror(errno));
			return (-1);
		}
		return (0);
	}
	if (extc_ident_fd(t->base, &base_id) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat: %s", t->path, strerror(errno));
		return (-1);
	}
	return (open_level(t->base, &base_id, pol->node_name, create, pol, t->path,
			   sizeof(t->path), &t->node, why, whylen));
}

/*
 * Open <uid> and <job> below the node level. While a job level is being
 * made, the uid level is held with a shared lock, so that an epilog that
 * removes the (then empty) uid level of the same user cannot pull it away
 * between our open and our mkdir; a level found already unlinked is
 * simply made again.
 */
static int open_job(struct tree_fds *t, const struct extc_fs_policy *pol, uid_t uid,
		    uint32_t jobid, bool create, char *why, size_t whylen)
{
	char uname[EXTC_NAME_LEN], jname[EXTC_NAME_LEN];
	struct extc_ident node_id, uid_id;
	size_t plen = strlen(t->path);
	int attempt;
	int rv = -1;

	if (extc_layout_uid_name(uid, uname, sizeof(uname)) < 0 ||
	    extc_layout_job_name(jobid, jname, sizeof(jname)) < 0) {
		extc_fmt(why, whylen, "uid %u, job %u: not ids this plugin manages",
			 (unsigned)uid, jobid);
		return (-1);
	}
	if (extc_ident_fd(t->node, &node_id) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat: %s", t->path, strerror(errno));
		return (-1);
	}
	for (attempt = 0; attempt < LEVEL_RETRIES; attempt++) {
		t->path[plen] = '\0';
		rv = open_level(t->node, &node_id, uname, create, pol, t->path, sizeof(t->path),
				&t->uid, why, whylen);
		if (rv != 0 || !create)
			break;
		if (flock(t->uid, LOCK_SH) < 0 || extc_ident_fd(t->uid, &uid_id) < 0) {
			extc_fmt(why, whylen, "%s: cannot lock: %s", t->path, strerror(errno));
			return (-1);
		}
		if (uid_id.nlink > 0)
			break;
		close(t->uid);
		t->uid = -1;
		rv = -1;
		extc_fmt(why, whylen, "%s: removed repeatedly while in use", t->path);
	}
	if (rv != 0)
		return (rv);
	if (extc_ident_fd(t->uid, &uid_id) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat: %s", t->path, strerror(errno));
		return (-1);
	}
	rv = open_level(t->uid, &uid_id, jname, create, pol, t->path, sizeof(t->path), &t->job,
			why, whylen);
	if (rv == 0 && create) {
		struct extc_ident job_id;

		/* held by every step of the job for its lifetime: a sweep skips held levels */
		if (flock(t->job, LOCK_SH) < 0 || extc_ident_fd(t->job, &job_id) < 0) {
			extc_fmt(why, whylen, "%s: cannot lock: %s", t->path, strerror(errno));
			rv = -1;
		} else if (job_id.nlink == 0) {
			extc_fmt(why, whylen, "%s: removed while being set up", t->path);
			rv = -1;
		}
	}
	if (create)
		flock(t->uid, LOCK_UN);
	return (rv);
}

static int open_trash(struct tree_fds *t, bool create, int *out, char *why, size_t whylen);
static int move_to_trash(int dirfd, const char *name, int trashfd, const char *tag);

/* Only the directories some tool will not make itself (struct extc_var). */
static int make_subdirs(int leaffd, const struct extc_config *cfg, const struct extc_ids *ids,
			const char *path, char *why, size_t whylen)
{
	size_t i, made;
	int fd = -1;
	int rv = -1;

	for (i = 0; i < cfg->nvars; i++) {
		const char *sub = cfg->vars[i].subdir;

		if (!cfg->vars[i].make_dir)
			continue;
		if (mkdirat(leaffd, sub, LEAF_MODE) < 0 && errno != EEXIST) {
			extc_fmt(why, whylen, "%s/%s: cannot create: %s", path, sub, strerror(errno));
			goto out;
		}
		fd = openat(leaffd, sub, EXTC_DIR_OPEN_FLAGS);
		if (fd < 0) {
			extc_fmt(why, whylen, "%s/%s: cannot open: %s", path, sub,
				 open_error(leaffd, sub, errno));
			goto out;
		}
		if (fchmod(fd, LEAF_MODE) < 0 || fchown(fd, ids->uid, ids->gid) < 0) {
			extc_fmt(why, whylen, "%s/%s: cannot hand over: %s", path, sub, strerror(errno));
			goto out;
		}
		close(fd);
		fd = -1;
	}
	rv = 0;
out:
	if (fd >= 0)
		close(fd);
	/*
	 * The leaf is still root's and unreachable by users, so these names
	 * are the empty directories just made: rmdir by name needs no
	 * descriptor, and the failure may have been a shortage of them.
	 */
	for (made = 0; rv < 0 && made <= i && made < cfg->nvars; made++) {
		if (cfg->vars[made].make_dir)
			unlinkat(leaffd, cfg->vars[made].subdir, AT_REMOVEDIR);
	}
	return (rv);
}

/*
 * The leaf is made root-owned inside a root-owned job level, filled, and
 * only then handed to the user with fchmod/fchown on its descriptor: until
 * that moment no user can reach it, and nothing is ever changed by path.
 */
static int make_leaf(struct tree_fds *t, const char *leaf, const struct extc_config *cfg,
		     const struct extc_fs_policy *pol, const struct extc_ids *ids, bool reuse,
		     char *why, size_t whylen)
{
	struct extc_rm_limits limits;
	struct extc_rm_report rep;
	struct extc_ident job_id, id;
	size_t plen = strlen(t->path);
	bool created = false;
	int attempt;
	int fd = -1;
	int rv = -1;

	/*
	 * Leaf creation is serialised per user on the uid level: the job level
	 * cannot serve, every running step of the job holds it shared.
	 */
	if (extc_fmt(t->path + plen, sizeof(t->path) - plen, "/%s", leaf) < 0 ||
	    extc_ident_fd(t->job, &job_id) < 0 || flock(t->uid, LOCK_EX) < 0) {
		extc_fmt(why, whylen, "%s: cannot prepare: %s", t->path, strerror(errno));
		return (-1);
	}
	for (attempt = 0; attempt < 2; attempt++) {
		if (mkdirat(t->job, leaf, LEAF_MODE) == 0) {
			created = true;
		} else if (errno != EEXIST) {
			extc_fmt(why, whylen, "%s: cannot create: %s", t->path, strerror(errno));
			goto out;
		}
		fd = openat(t->job, leaf, EXTC_DIR_OPEN_FLAGS);
		if (fd < 0 || extc_ident_fd(fd, &id) < 0) {
			extc_fmt(why, whylen, "%s: cannot open: %s", t->path,
				 open_error(t->job, leaf, errno));
			goto out;
		}
		if (!extc_ident_same_mount(&id, &job_id)) {
			extc_fmt(why, whylen, "%s: is a mount point; refusing it", t->path);
			goto out;
		}
		if (created)
			break;
		if (reuse && id.uid == ids->uid) {
			rv = 0;
			goto out;
		}
		/* left by an earlier run or a half-made attempt: never hand it over */
		close(fd);
		fd = -1;
		if (extc_rm_tree_at(t->job, leaf, bounded_limits(pol, &limits), &rep) < 0) {
			char text[256];

			extc_rm_report_text(&rep, text, sizeof(text));
			extc_fmt(why, whylen, "%s: a stale directory could not be removed: %s",
				 t->path, text);
			goto out;
		}
	}
	if (!created || id.uid != pol->owner) {
		extc_fmt(why, whylen, "%s: changed while being created; refusing it", t->path);
		goto out;
	}
	if (make_subdirs(fd, cfg, ids, t->path, why, whylen) < 0)
		goto out;
	if (fchmod(fd, LEAF_MODE) < 0 || fchown(fd, ids->uid, ids->gid) < 0) {
		extc_fmt(why, whylen, "%s: cannot hand over to uid %u: %s", t->path,
			 (unsigned)ids->uid, strerror(errno));
		goto out;
	}
	rv = 0;
out:
	if (fd >= 0)
		close(fd);
	/*
	 * Nothing but root could write in the leaf before it was handed over,
	 * so it is usually empty: rmdir needs no descriptor, which matters
	 * when the failure was running out of them.
	 */
	if (rv < 0 && created && unlinkat(t->job, leaf, AT_REMOVEDIR) < 0 && errno != ENOENT)
		extc_rm_tree_at(t->job, leaf, bounded_limits(pol, &limits), &rep);
	flock(t->uid, LOCK_UN);
	return (rv);
}

int extc_tree_prepare_base(const struct extc_config *cfg, const struct extc_fs_policy *pol,
			   char *why, size_t whylen)
{
	struct tree_fds t;
	int rv;

	tree_fds_init(&t);
	rv = open_top(cfg, pol, true, &t, why, whylen);
	tree_fds_close(&t);
	return (rv == 0 ? 0 : -1);
}

int extc_tree_create(const struct extc_config *cfg, const struct extc_fs_policy *pol,
		     const struct extc_ids *ids, enum extc_mode mode,
		     char *leaf_path, size_t pathlen, int *hold_fd, char *why, size_t whylen)
{
	char leaf[EXTC_NAME_LEN];
	struct tree_fds t;
	int rv = -1;

	tree_fds_init(&t);
	if (extc_layout_leaf_name(mode, ids->stepid, leaf, sizeof(leaf)) < 0) {
		extc_fmt(why, whylen, "step %u gets no directory in mode %s", ids->stepid,
			 extc_mode_name(mode));
		goto out;
	}
	if (open_top(cfg, pol, true, &t, why, whylen) != 0 ||
	    open_job(&t, pol, ids->uid, ids->jobid, true, why, whylen) != 0)
		goto out;
	/* the longest exported value must fit before anything is handed over */
	if (strlen(t.path) + 1 + strlen(leaf) + 1 + EXTC_SUBDIR_MAX >= pathlen) {
		extc_fmt(why, whylen, "%s/%s: path too long", t.path, leaf);
		goto out;
	}
	if (make_leaf(&t, leaf, cfg, pol, ids, mode == EXTC_MODE_JOB || pol->job_private, why,
		      whylen) != 0)
		goto out;
	extc_fmt(leaf_path, pathlen, "%s", t.path);
	*hold_fd = t.job;
	t.job = -1;
	rv = 0;
out:
	tree_fds_close(&t);
	return (rv);
}

int extc_tree_leaf_ident(const struct extc_config *cfg, const struct extc_fs_policy *pol,
			 const struct extc_ids *ids, enum extc_mode mode, struct extc_ident *id,
			 char *why, size_t whylen)
{
	char leaf[EXTC_NAME_LEN];
	struct tree_fds t;
	int fd = -1;
	int rv;

	tree_fds_init(&t);
	if (extc_layout_leaf_name(mode, ids->stepid, leaf, sizeof(leaf)) < 0) {
		rv = 1;
		goto out;
	}
	rv = open_top(cfg, pol, false, &t, why, whylen);
	if (rv == 0)
		rv = open_job(&t, pol, ids->uid, ids->jobid, false, why, whylen);
	if (rv != 0)
		goto out;
	fd = openat(t.job, leaf, EXTC_DIR_OPEN_FLAGS);
	if (fd < 0) {
		rv = (errno == ENOENT) ? 1 : -1;
		if (rv < 0)
			extc_fmt(why, whylen, "%s/%s: cannot open: %s", t.path, leaf,
				 open_error(t.job, leaf, errno));
		goto out;
	}
	if (extc_ident_fd(fd, id) < 0) {
		extc_fmt(why, whylen, "%s/%s: cannot stat: %s", t.path, leaf, strerror(errno));
		rv = -1;
	}
out:
	if (fd >= 0)
		close(fd);
	tree_fds_close(&t);
	return (rv);
}

static void report_add(struct extc_rm_report *sum, const struct extc_rm_report *part)
{
	sum->removed += part->removed;
	sum->failed += part->failed;
	sum->mounts += part->mounts;
	if (sum->first_errno == 0 && part->first_errno != 0) {
		sum->first_errno = part->first_errno;
		memcpy(sum->first_name, part->first_name, sizeof(sum->first_name));
	}
	if (sum->stopped == NULL) {
		sum->stopped = part->stopped;
		sum->stop_errno = part->stop_errno;
	}
}

int extc_tree_remove_leaf(const struct extc_config *cfg, const struct extc_fs_policy *pol,
			  const struct extc_ids *ids, enum extc_mode mode,
			  struct extc_rm_report *report, char *why, size_t whylen)
{
	struct extc_rm_limits limits;
	char leaf[EXTC_NAME_LEN];
	struct tree_fds t;
	int trashfd = -1;
	int rv;

	memset(report, 0, sizeof(*report));
	tree_fds_init(&t);
	if (extc_layout_leaf_name(mode, ids->stepid, leaf, sizeof(leaf)) < 0) {
		rv = 0;
		goto out;
	}
	rv = open_top(cfg, pol, false, &t, why, whylen);
	if (rv == 0)
		rv = open_job(&t, pol, ids->uid, ids->jobid, false, why, whylen);
	if (rv == 1) {
		rv = 0;		/* nothing was ever made here */
		goto out;
	}
	if (rv < 0)
		goto out;
	rv = extc_rm_tree_at(t.job, leaf, bounded_limits(pol, &limits), report);
	if (rv < 0) {
		char text[256], ignored[256];

		extc_rm_report_text(report, text, sizeof(text));
		extc_fmt(why, whylen, "%s/%s: %s", t.path, leaf, text);
		/*
		 * Out of time (a huge cache, or a process still writing into
		 * it): the rest goes to the trash in one rename, out of every
		 * user's reach, and the job epilog's emptier finishes it.
		 */
		if (report->stopped != NULL && report->failed == 0 &&
		    open_trash(&t, true, &trashfd, ignored, sizeof(ignored)) == 0 &&
		    move_to_trash(t.job, leaf, trashfd, leaf) == 0)
			extc_fmt(why, whylen, "%s/%s: %s; moved what is left to %s", t.path, leaf,
				 text, EXTC_TRASH_NAME);
	}
out:
	if (trashfd >= 0)
		close(trashfd);
	tree_fds_close(&t);
	return (rv);
}

/*
 * <base>[/<node>]/.trash: root-owned 0700, so what is moved there is out of
 * every user's reach by path at once, and can be removed at leisure.
 */
static int open_trash(struct tree_fds *t, bool create, int *out, char *why, size_t whylen)
{
	struct extc_ident node_id, id;
	bool created = false;
	int fd = -1;
	int rv = -1;

	if (extc_ident_fd(t->node, &node_id) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat: %s", t->path, strerror(errno));
		goto out;
	}
	if (create) {
		if (mkdirat(t->node, EXTC_TRASH_NAME, TRASH_MODE) == 0)
			created = true;
		else if (errno != EEXIST) {
			extc_fmt(why, whylen, "%s/%s: cannot create: %s", t->path, EXTC_TRASH_NAME,
				 strerror(errno));
			goto out;
		}
	}
	fd = openat(t->node, EXTC_TRASH_NAME, EXTC_DIR_OPEN_FLAGS);
	if (fd < 0) {
		if (errno == ENOENT && !create)
			rv = 1;
		else
			extc_fmt(why, whylen, "%s/%s: cannot open: %s", t->path, EXTC_TRASH_NAME,
				 open_error(t->node, EXTC_TRASH_NAME, errno));
		goto out;
	}
	if (created && (fchown(fd, 0, 0) < 0 || fchmod(fd, TRASH_MODE) < 0)) {
		extc_fmt(why, whylen, "%s/%s: cannot set owner and mode: %s", t->path,
			 EXTC_TRASH_NAME, strerror(errno));
		goto out;
	}
	if (extc_ident_fd(fd, &id) < 0 || !S_ISDIR(id.mode) || id.uid != 0 ||
	    (id.mode & 077) != 0 || !extc_ident_same_mount(&id, &node_id)) {
		extc_fmt(why, whylen, "%s/%s: not a root-owned 0700 directory on the base's mount; "
			 "refusing it", t->path, EXTC_TRASH_NAME);
		goto out;
	}
	*out = fd;
	fd = -1;
	rv = 0;
out:
	if (fd >= 0)
		close(fd);
	return (rv);
}

/*
 * Move <dirfd>/<name> into the trash under a name no other move can take.
 * Returns 0 when moved, -1 (errno set) when it could not be.
 */
static int move_to_trash(int dirfd, const char *name, int trashfd, const char *tag)
{
	static unsigned seq;
	char tname[96];

	if (extc_fmt(tname, sizeof(tname), "%s.%d.%llx.%u", tag, (int)getpid(),
		     (unsigned long long)extc_monotonic_ns(), seq++) < 0) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	return (renameat2(dirfd, name, trashfd, tname, RENAME_NOREPLACE));
}

/* Drop a user's level once empty; creators hold it shared while they use it. */
static void drop_uid_level(int nodefd, int uidfd, const char *uname, struct extc_rm_report *report)
{
	struct extc_ident held;
	struct stat named;

	if (flock(uidfd, LOCK_EX) < 0)
		return;
	/*
	 * Only the holder of this lock removes this directory, so if the name
	 * still leads to it now it does so at the unlink too; if it leads to a
	 * newer level, that one is in use by whoever made it.
	 */
	if (extc_ident_fd(uidfd, &held) == 0 && held.nlink > 0 &&
	    fstatat(nodefd, uname, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
	    named.st_dev == held.dev && named.st_ino == held.ino &&
	    unlinkat(nodefd, uname, AT_REMOVEDIR) == 0)
		report->removed++;
	flock(uidfd, LOCK_UN);
}

/*
 * Names of a job's levels and the user's level opened (no creation), for
 * the epilog's paths: 0 open, 1 nothing there (or ids never managed), -1.
 */
static int open_user_level(const struct extc_config *cfg, const struct extc_fs_policy *pol,
			   uid_t uid, uint32_t jobid, struct tree_fds *t, char *uname,
			   char *jname, char *why, size_t whylen)
{
	struct extc_ident node_id;
	int rv;

	if (extc_layout_uid_name(uid, uname, EXTC_NAME_LEN) < 0 ||
	    extc_layout_job_name(jobid, jname, EXTC_NAME_LEN) < 0)
		return (1);
	rv = open_top(cfg, pol, false, t, why, whylen);
	if (rv == 0 && extc_ident_fd(t->node, &node_id) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat: %s", t->path, strerror(errno));
		rv = -1;
	}
	if (rv == 0)
		rv = open_level(t->node, &node_id, uname, false, pol, t->path, sizeof(t->path),
				&t->uid, why, whylen);
	return (rv);
}

int extc_tree_remove_job(const struct extc_config *cfg, const struct extc_fs_policy *pol,
			 uid_t uid, uint32_t jobid, struct extc_rm_report *report,
			 char *why, size_t whylen)
{
	char uname[EXTC_NAME_LEN], jname[EXTC_NAME_LEN];
	struct extc_rm_limits limits;
	struct tree_fds t;
	int rv;

	memset(report, 0, sizeof(*report));
	tree_fds_init(&t);
	rv = open_user_level(cfg, pol, uid, jobid, &t, uname, jname, why, whylen);
	if (rv != 0) {
		rv = (rv == 1) ? 0 : -1;
		goto out;
	}
	if (extc_rm_tree_at(t.uid, jname, bounded_limits(pol, &limits), report) < 0) {
		char text[256];

		extc_rm_report_text(report, text, sizeof(text));
		extc_fmt(why, whylen, "%s/%s: %s", t.path, jname, text);
		rv = -1;
		goto out;
	}
	drop_uid_level(t.node, t.uid, uname, report);
	rv = 0;
out:
	tree_fds_close(&t);
	return (rv);
}

int extc_tree_retire_job(const struct extc_config *cfg, const struct extc_fs_policy *pol,
			 uid_t uid, uint32_t jobid, bool *moved, char *why, size_t whylen)
{
	char uname[EXTC_NAME_LEN], jname[EXTC_NAME_LEN];
	struct extc_rm_report ignored;
	struct tree_fds t;
	struct stat sb;
	int trashfd = -1;
	int rv;

	*moved = false;
	tree_fds_init(&t);
	rv = open_user_level(cfg, pol, uid, jobid, &t, uname, jname, why, whylen);
	if (rv != 0) {
		rv = (rv == 1) ? 0 : -1;
		goto out;
	}
	if (fstatat(t.uid, jname, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
		rv = 0;		/* no tree for this job here */
		goto out;
	}
	if (open_trash(&t, true, &trashfd, why, whylen) != 0 ||
	    move_to_trash(t.uid, jname, trashfd, jname) < 0) {
		if (trashfd >= 0)
			extc_fmt(why, whylen, "%s/%s: cannot move to %s: %s", t.path, jname,
				 EXTC_TRASH_NAME, strerror(errno));
		rv = 1;		/* the tree is fine, the trash is not to be had */
		goto out;
	}
	*moved = true;
	memset(&ignored, 0, sizeof(ignored));
	drop_uid_level(t.node, t.uid, uname, &ignored);
	rv = 0;
out:
	if (trashfd >= 0)
		close(trashfd);
	tree_fds_close(&t);
	return (rv);
}

int extc_tree_empty_trash(const struct extc_config *cfg, const struct extc_fs_policy *pol,
			  struct extc_rm_report *report, char *why, size_t whylen)
{
	struct extc_rm_report part;
	struct tree_fds t;
	struct dirent *de;
	DIR *dir = NULL;
	int trashfd = -1, dfd;
	int rv;

	memset(report, 0, sizeof(*report));
	tree_fds_init(&t);
	rv = open_top(cfg, pol, false, &t, why, whylen);
	if (rv == 0)
		rv = open_trash(&t, false, &trashfd, why, whylen);
	if (rv != 0) {
		rv = (rv == 1) ? 0 : -1;
		goto out;
	}
	/* one emptier at a time; a second one has nothing to add */
	if (flock(trashfd, LOCK_EX | LOCK_NB) < 0) {
		rv = 0;
		goto out;
	}
	dfd = dup(trashfd);
	if (dfd < 0 || (dir = fdopendir(dfd)) == NULL) {
		if (dfd >= 0)
			close(dfd);
		extc_fmt(why, whylen, "%s/%s: cannot read: %s", t.path, EXTC_TRASH_NAME,
			 strerror(errno));
		rv = -1;
		goto out;
	}
	while (report->stopped == NULL) {
		errno = 0;
		de = readdir(dir);
		if (de == NULL) {
			if (errno != 0)
				extc_rm_report_stop(report, errno, "the trash could not be read");
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		extc_rm_tree_at(trashfd, de->d_name, pol->rm_limits, &part);
		report_add(report, &part);
	}
	if (report->failed != 0 || report->stopped != NULL) {
		char text[256];

		extc_rm_report_text(report, text, sizeof(text));
		extc_fmt(why, whylen, "%s/%s: %s", t.path, EXTC_TRASH_NAME, text);
		rv = -1;
		goto out;
	}
	rv = 0;
out:
	if (dir != NULL)
		closedir(dir);
	if (trashfd >= 0)
		close(trashfd);
	tree_fds_close(&t);
	return (rv);
}

/* One user's level: remove every job tree that is neither held nor alive. */
static void sweep_user(int nodefd, int trashfd, const char *uname,
		       const struct extc_fs_policy *pol, extc_job_alive_fn alive, void *arg,
		       struct extc_sweep_report *rep)
{
	struct extc_ident node_id, uid_id;
	struct extc_rm_limits limits;
	struct extc_rm_report part;
	char path[PATH_MAX] = "";
	char why[256];
	struct dirent *de;
	DIR *dir = NULL;
	int uidfd = -1, dfd;

	if (extc_ident_fd(nodefd, &node_id) < 0 ||
	    open_level(nodefd, &node_id, uname, false, pol, path, sizeof(path), &uidfd, why,
		       sizeof(why)) != 0) {
		rep->refused++;
		goto out;
	}
	dfd = dup(uidfd);
	if (dfd < 0 || extc_ident_fd(uidfd, &uid_id) < 0 || (dir = fdopendir(dfd)) == NULL) {
		if (dfd >= 0)
			close(dfd);
		rep->refused++;
		goto out;
	}
	for (;;) {
		uint32_t jobid;
		int jobfd = -1;

		errno = 0;
		de = readdir(dir);
		if (de == NULL) {
			/* a level not read to its end was not swept: say so */
			if (errno != 0)
				rep->refused++;
			break;
		}
		if (extc_layout_parse_job_name(de->d_name, &jobid) < 0)
			continue;
		path[0] = '\0';
		if (open_level(uidfd, &uid_id, de->d_name, false, pol, path, sizeof(path), &jobfd,
			       why, sizeof(why)) != 0) {
			rep->refused++;
			continue;
		}
		if (flock(jobfd, LOCK_EX | LOCK_NB) < 0) {
			rep->held++;	/* a step of that job runs here now */
		} else if (alive != NULL && alive(jobid, arg)) {
			rep->alive++;
		} else {
			if (trashfd >= 0 && move_to_trash(uidfd, de->d_name, trashfd, de->d_name) == 0) {
				rep->jobs_removed++;
			} else if (extc_rm_tree_at(uidfd, de->d_name, bounded_limits(pol, &limits),
						   &part) == 0) {
				rep->jobs_removed++;
				report_add(&rep->rm, &part);
			} else {
				rep->jobs_failed++;
				report_add(&rep->rm, &part);
			}
		}
		close(jobfd);
	}
	drop_uid_level(nodefd, uidfd, uname, &rep->rm);
out:
	if (dir != NULL)
		closedir(dir);
	if (uidfd >= 0)
		close(uidfd);
}

int extc_tree_sweep(const struct extc_config *cfg, const struct extc_fs_policy *pol,
		    extc_job_alive_fn alive, void *arg, struct extc_sweep_report *report,
		    char *why, size_t whylen)
{
	struct tree_fds t;
	struct dirent *de;
	DIR *dir = NULL;
	int trashfd = -1;
	int dfd;
	int rv;

	memset(report, 0, sizeof(*report));
	tree_fds_init(&t);
	rv = open_top(cfg, pol, false, &t, why, whylen);
	if (rv != 0) {
		rv = (rv == 1) ? 0 : -1;
		goto out;
	}
	/* leftovers go to the trash like an epilog's own job; without one, in place */
	if (open_trash(&t, true, &trashfd, why, whylen) != 0)
		trashfd = -1;
	dfd = dup(t.node);
	if (dfd < 0 || (dir = fdopendir(dfd)) == NULL) {
		if (dfd >= 0)
			close(dfd);
		extc_fmt(why, whylen, "%s: cannot read: %s", t.path, strerror(errno));
		rv = -1;
		goto out;
	}
	for (;;) {
		uid_t uid;

		errno = 0;
		de = readdir(dir);
		if (de == NULL)
			break;
		if (extc_layout_parse_uid_name(de->d_name, &uid) < 0)
			continue;
		sweep_user(t.node, trashfd, de->d_name, pol, alive, arg, report);
	}
	if (errno != 0) {
		extc_fmt(why, whylen, "%s: cannot read: %s", t.path, strerror(errno));
		rv = -1;
		goto out;
	}
	rv = 0;
out:
	if (dir != NULL)
		closedir(dir);
	if (trashfd >= 0)
		close(trashfd);
	tree_fds_close(&t);
	return (rv);
}
