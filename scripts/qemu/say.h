/* SPDX-License-Identifier: GPL-2.0 */
/*
 * say(): print one line on standard output with a single write(2), so
 * that stdio buffering never splits it and another process's output
 * cannot land inside it.  For the guest programs of scripts/lk_qemu.py
 * (init.c, fuzz.c), which the serial console's reader parses by line.
 */
#ifndef LK_QEMU_SAY_H
#define LK_QEMU_SAY_H

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(1, buf, n) < 0)
		return;
}

#endif
