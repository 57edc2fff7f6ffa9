/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: log lines, all prefixed "ext-cache:" and naming the job and step. */
#ifndef EXTC_LOG_H_
#define EXTC_LOG_H_

#include <stdint.h>

/* Name the job and step that later lines are about ("job 12 step 0"). */
void extc_log_scope_job(uint32_t jobid, uint32_t stepid);
void extc_log_scope_clear(void);

void extc_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void extc_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void extc_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void extc_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A line for the user, not a problem: from a task it reaches the user's
 * terminal at error's level without "error: " (slurm_spank_log), and the
 * slurmd log as well.
 */
void extc_user(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* EXTC_LOG_H_ */
