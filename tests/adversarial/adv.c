/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache adversarial tests: shared machinery (see adv.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "adv.h"

static pid_t live_attackers[8];
static unsigned nlive;
static void kill_live_attackers(void);
static void drop_live_sentinels(void);

int adv_setup(void **state)
{
	struct fsfx *fx = calloc(1, sizeof(*fx));

	*state = fx;
	return (fx == NULL ? -1 : fsfx_setup(fx, 0755));
}

int adv_setup_tmpfs(void **state)
{
	struct fsfx *fx = calloc(1, sizeof(*fx));

	*state = fx;
	return (fx == NULL ? -1 : fsfx_setup_tmpfs(fx, "mode=0755,size=2g,nr_inodes=2000000"));
}

int adv_teardown(void **state)
{
	struct fsfx *fx = *state;
	int rv;

	kill_live_attackers();
	drop_live_sentinels();
	if (fx == NULL)
		return (-1);
	rv = fsfx_teardown(fx);
	free(fx);
	return (rv);
}

const char *adv_path(const struct fsfx *fx, char *buf, const char *rel)
{
	return (fsfx_path(fx, buf, rel));
}

void adv_mkdir(struct fsfx *fx, const char *rel, mode_t mode, uid_t uid, gid_t gid)
{
	char p[PATH_MAX];

	adv_path(fx, p, rel);
	if (mkdir(p, 0700) < 0 || chown(p, uid, gid) < 0 || chmod(p, mode) < 0) {
		print_error("mkdir %s: %s\n", p, strerror(errno));
		fail();
	}
}

void adv_note_mount(struct fsfx *fx, const char *abs_path)
{
	assert_int_equal(fsfx_note_mount(fx, abs_path), 0);
}

void adv_mount_tmpfs(struct fsfx *fx, const char *rel, const char *options)
{
	char p[PATH_MAX];

	if (fsfx_tmpfs_at(fx, rel, options) < 0) {
		print_error("mount -t tmpfs %s: %s (these tests need root)\n", adv_path(fx, p, rel),
			    strerror(errno));
		fail();
	}
}

void adv_bind(struct fsfx *fx, const char *src_rel, const char *dst_rel)
{
	char src[PATH_MAX], dst[PATH_MAX];

	if (fsfx_bind_at(fx, src_rel, dst_rel) < 0) {
		print_error("mount --bind %s %s: %s (these tests need root)\n",
			    adv_path(fx, src, src_rel), adv_path(fx, dst, dst_rel), strerror(errno));
		fail();
	}
}

void adv_assert_no_fd_leak(const struct fsfx *fx)
{
	int now = fsfx_fd_count();

	if (now != fx->fds) {
		print_error("descriptors: %d open, %d at setup\n", now, fx->fds);
		fail();
	}
}

/* ---- sentinels ---------------------------------------------------------------------------- */

/* The /tmp sentinels made and not yet dropped: a failing test leaves through longjmp. */
#define MAX_LIVE_SENTINELS 32
static char live_tmp[MAX_LIVE_SENTINELS][2][PATH_MAX];

static void drop_tmp_paths(const char *file, const char *dir)
{
	char keep[PATH_MAX];

	unlink(file);
	unlink(fsfx_join(keep, PATH_MAX, dir, "keep"));
	rmdir(dir);
}

static void drop_live_sentinels(void)
{
	int i;

	for (i = 0; i < MAX_LIVE_SENTINELS; i++) {
		if (live_tmp[i][0][0] != '\0') {
			drop_tmp_paths(live_tmp[i][0], live_tmp[i][1]);
			live_tmp[i][0][0] = '\0';
		}
	}
}

void adv_sentinels_make(struct fsfx *fx, struct adv_sentinels *s)
{
	static unsigned seq;
	unsigned n = seq++;

	memset(s, 0, sizeof(*s));
	snprintf(s->tmp_file, PATH_MAX, "/tmp/extc-adv-sentinel-%d-%u", (int)getpid(), n);
	snprintf(s->tmp_dir, PATH_MAX, "/tmp/extc-adv-sentdir-%d-%u", (int)getpid(), n);
	memcpy(live_tmp[n % MAX_LIVE_SENTINELS][0], s->tmp_file, PATH_MAX);
	memcpy(live_tmp[n % MAX_LIVE_SENTINELS][1], s->tmp_dir, PATH_MAX);
	adv_path(fx, s->etc_dir, "etc");
	adv_path(fx, s->other_dir, "home-other");
	fsfx_join(s->etc_file, PATH_MAX, s->etc_dir, "passwd");
	fsfx_join(s->other_file, PATH_MAX, s->other_dir, "data");
	unlink(s->tmp_file);
	assert_int_equal(fsfx_sentinel_file(&s->s[0], s->tmp_file, "in /tmp\n", 0644, 0, 0), 0);
	assert_int_equal(fsfx_sentinel_dir(&s->s[1], s->tmp_dir, 0755, 0, 0), 0);
	assert_int_equal(mkdir(s->etc_dir, 0755), 0);
	assert_int_equal(fsfx_sentinel_file(&s->s[2], s->etc_file, "root:x:0:0\n", 0644, 0, 0),
			 0);
	assert_int_equal(mkdir(s->other_dir, 0700), 0);
	assert_int_equal(fsfx_sentinel_file(&s->s[3], s->other_file, "other user's data\n", 0600,
					      ADV_OTHER_UID, ADV_OTHER_GID), 0);
	/* the directories themselves last: their mtime is final only now */
	assert_int_equal(chown(s->other_dir, ADV_OTHER_UID, ADV_OTHER_GID), 0);
	assert_int_equal(fsfx_sentinel_file(&s->s[4], fsfx_join((char[PATH_MAX]){ 0 }, PATH_MAX,
					      s->etc_dir, "shadow"), "root:*:\n", 0640, 0, 42), 0);
	{
		const struct timespec t[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
		struct stat st;

		assert_int_equal(utimensat(AT_FDCWD, s->etc_dir, t, 0), 0);
		assert_int_equal(lstat(s->etc_dir, &st), 0);
		s->s[5].st = st;
		s->s[5].is_dir = false;
		snprintf(s->s[5].path, sizeof(s->s[5].path), "%s", s->etc_dir);
	}
}

void adv_sentinels_assert(const struct adv_sentinels *s)
{
	bool ok = true;
	int i;

	for (i = 0; i < ADV_NSENTINELS; i++) {
		struct stat st;

		if (i == 5) {
			/* the /etc-like directory: identity, owner, mode, mtime, entries */
			if (lstat(s->s[5].path, &st) < 0 || st.st_ino != s->s[5].st.st_ino ||
			    st.st_mode != s->s[5].st.st_mode || st.st_uid != s->s[5].st.st_uid ||
			    st.st_mtim.tv_sec != s->s[5].st.st_mtim.tv_sec ||
			    st.st_nlink != s->s[5].st.st_nlink ||
			    fsfx_count_entries_at(AT_FDCWD, s->s[5].path) != 2) {
				fprintf(stderr, "sentinel directory %s changed\n", s->s[5].path);
				ok = false;
			}
			continue;
		}
		if (!fsfx_sentinel_intact(&s->s[i]))
			ok = false;
	}
	if (!ok) {
		print_error("a sentinel outside the tree changed\n");
		fail();
	}
}

void adv_sentinels_drop(struct adv_sentinels *s)
{
	int i;

	drop_tmp_paths(s->tmp_file, s->tmp_dir);
	for (i = 0; i < MAX_LIVE_SENTINELS; i++) {
		if (strcmp(live_tmp[i][0], s->tmp_file) == 0)
			live_tmp[i][0][0] = '\0';
	}
}

/* ---- the attacker --------------------------------------------------------------------------- */

static void become(uid_t uid, gid_t gid)
{
	if (uid == 0)
		return;
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		_exit(97);
}

void adv_attacker_start(struct adv_attacker *a, adv_attack_fn fn, void *arg, uid_t uid, gid_t gid)
{
	pid_t parent = getpid();

	a->sh = mmap(NULL, sizeof(*a->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		     0);
	assert_true(a->sh != MAP_FAILED);
	memset((void *)a->sh, 0, sizeof(*a->sh));
	a->pid = fork();
	assert_true(a->pid >= 0);
	if (a->pid == 0) {
		become(uid, gid);
		/* after become(): a change of credentials clears the parent-death signal */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(98);
		a->sh->ready = 1;
		while (!a->sh->stop) {
			a->sh->tries++;
			if (fn(arg))
				a->sh->done++;
			else
				a->sh->last_errno = errno;
		}
		_exit(0);
	}
	while (!a->sh->ready) {
		int status;

		if (waitpid(a->pid, &status, WNOHANG) == a->pid) {
			print_error("attacker died at start (status %d)\n", status);
			fail();
		}
		usleep(100);
	}
	live_attackers[nlive++ % 8] = a->pid;
}

/* A test that fails leaves through longjmp: its attackers are killed at teardown. */
static void kill_live_attackers(void)
{
	int i;

	for (i = 0; i < 8; i++) {
		if (live_attackers[i] > 0) {
			kill(live_attackers[i], SIGKILL);
			waitpid(live_attackers[i], NULL, 0);
			live_attackers[i] = 0;
		}
	}
}

unsigned long adv_attacker_stop(struct adv_attacker *a)
{
	unsigned long done;
	int status;

	a->sh->stop = 1;
	assert_int_equal(waitpid(a->pid, &status, 0), a->pid);
	for (int i = 0; i < 8; i++) {
		if (live_attackers[i] == a->pid)
			live_attackers[i] = 0;
	}
	done = a->sh->done;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		print_error("attacker ended badly (status 0x%x)\n", status);
		munmap((void *)a->sh, sizeof(*a->sh));
		fail();
	}
	munmap((void *)a->sh, sizeof(*a->sh));
	return (done);
}

int adv_run_as(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return (-1);
	if (pid == 0) {
		become(uid, gid);
		_exit(fn(arg) == 0 ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return (-1);
	return (WEXITSTATUS(status));
}

void adv_run_bounded(int (*fn)(void *), void *arg, double limit_s, void (*unblock)(void *),
		     void *uarg, struct adv_bounded *b)
{
	double t0 = adv_now();
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn(arg));
	b->blocked = true;
	while (adv_now() - t0 < limit_s) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			b->blocked = false;
			break;
		}
		usleep(20000);
	}
	b->took = adv_now() - t0;
	if (b->blocked) {
		if (unblock != NULL)
			unblock(uarg);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	b->status = !b->blocked && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

char *adv_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		fprintf(stderr, "adv_fmt: does not fit: %s\n", fmt);
		abort();
	}
	return (buf);
}

/* ---- scale and timing ---------------------------------------------------------------------- */

unsigned long adv_scaled(unsigned long n)
{
	const char *s = getenv("EXTC_ADV_SCALE");
	unsigned long pct = 100, v;

	if (s != NULL && *s != '\0')
		pct = strtoul(s, NULL, 10);
	v = n * pct / 100;
	return (v ? v : 1);
}

double adv_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

int adv_run_small_stack(size_t stack, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t th;
	int rv;

	if (pthread_attr_init(&attr) != 0)
		return (-1);
	rv = pthread_attr_setstacksize(&attr, stack);
	if (rv == 0)
		rv = pthread_create(&th, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	if (rv != 0)
		return (-1);
	return (pthread_join(th, NULL) == 0 ? 0 : -1);
}

int adv_sysctl_get(const char *name)
{
	char path[128], buf[32];
	int fd, n;

	snprintf(path, sizeof(path), "/proc/sys/fs/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return (-1);
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return (-1);
	buf[n] = '\0';
	return (atoi(buf));
}

int adv_sysctl_set(const char *name, int value)
{
	char path[128], buf[32];
	int fd, n, rv;

	snprintf(path, sizeof(path), "/proc/sys/fs/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return (-1);
	n = snprintf(buf, sizeof(buf), "%d\n", value);
	rv = (write(fd, buf, (size_t)n) == n) ? 0 : -1;
	close(fd);
	return (rv == 0 && adv_sysctl_get(name) == value ? 0 : -1);
}
