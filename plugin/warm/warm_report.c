/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: how a step's directory started, warm or cold, as one line for the user. */
#include <stdarg.h>
#include <string.h>

#include "base/text.h"
#include "warm/warm_data.h"
#include "warm/warm_report.h"

/* Hex digits of a key the user sees: 32 bits tell a user's few keys apart. */
#define KEY_SHOWN 8

void extc_warm_report_cold(struct extc_warm_report *r, const char *fmt, ...)
{
	va_list ap;

	memset(r, 0, sizeof(*r));
	r->kind = EXTC_WARM_REPORT_COLD;
	va_start(ap, fmt);
	/* a reason cut short still says why: the line is for a person */
	(void)extc_vfmt(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
}

void extc_warm_report_warm(struct extc_warm_report *r, const char *where, uint64_t files,
			   uint64_t bytes, uint64_t ns)
{
	memset(r, 0, sizeof(*r));
	r->kind = EXTC_WARM_REPORT_WARM;
	(void)extc_fmt(r->where, sizeof(r->where), "%s", where);
	r->files = files;
	r->bytes = bytes;
	r->ns = ns;
}

void extc_warm_report_taken(struct extc_warm_report *r, const char *where, uint64_t entries,
			    uint64_t ns)
{
	extc_warm_report_warm(r, where, entries, 0, ns);
	r->kind = EXTC_WARM_REPORT_TAKEN;
}

void extc_warm_report_seeded(struct extc_warm_report *r, const char *where,
			     const struct extc_warm_seed_res *res)
{
	switch (res->seed) {
	case EXTC_SEED_DONE:
		/* nothing there after all: another step of a pool key may hold its builds now */
		if (res->st.files == 0)
			extc_warm_report_cold(r, "%s held nothing when this step looked", where);
		else if (res->by_rename)
			extc_warm_report_taken(r, where, res->st.files, res->ns);
		else
			extc_warm_report_warm(r, where, res->st.files, res->st.bytes, res->ns);
		return;
	case EXTC_SEED_NOT_FRESH:
		extc_warm_report_kept(r);
		return;
	case EXTC_SEED_ABSENT:
		extc_warm_report_cold(r, "%s does not exist (yet)", where);
		return;
	case EXTC_SEED_REFUSED:
		break;
	}
	extc_warm_report_cold(r, "%s: not seeded: %s", where, res->seed_why);
}

void extc_warm_report_kept(struct extc_warm_report *r)
{
	memset(r, 0, sizeof(*r));
	r->kind = EXTC_WARM_REPORT_KEPT;
}

void extc_warm_report_line(const struct extc_warm_report *r, const char *node, char *buf,
			   size_t len)
{
	char size[64];

	switch (r->kind) {
	case EXTC_WARM_REPORT_WARM:
		extc_warm_data_size_text(r->bytes, size, sizeof(size));
		(void)extc_fmt(buf, len, "node %s: warm: seeded %llu %s, %s, from %s in %.3f s",
			       node, (unsigned long long)r->files, r->files == 1 ? "file" : "files",
			       size, r->where, (double)r->ns / 1e9);
		return;
	case EXTC_WARM_REPORT_TAKEN:
		(void)extc_fmt(buf, len, "node %s: warm: took %llu %s from %s in %.3f s "
			       "(renamed in, no copy)", node, (unsigned long long)r->files,
			       r->files == 1 ? "entry" : "entries", r->where, (double)r->ns / 1e9);
		return;
	case EXTC_WARM_REPORT_KEPT:
		(void)extc_fmt(buf, len, "node %s: warm: the job's directory already holds what an "
			       "earlier step of this job left: not seeded again", node);
		return;
	case EXTC_WARM_REPORT_COLD:
		(void)extc_fmt(buf, len, "node %s: cold: %s", node, r->why);
		return;
	case EXTC_WARM_REPORT_NOTHING:
		break;
	}
	(void)extc_fmt(buf, len, "node %s: cold: no seed directory was named and the node pool is "
		       "off on this node", node);
}

void extc_warm_report_key(const char *key, char *buf, size_t len)
{
	/* escaping cuts it after KEY_SHOWN bytes and says so with "..." */
	extc_escape(key, KEY_SHOWN, buf, len);
}

bool extc_warm_report_wanted(bool option, const char *env)
{
	if (option)
		return (true);
	return (env != NULL && env[0] != '\0' && strcmp(env, "0") != 0);
}
