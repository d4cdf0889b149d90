/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the guest programs of scripts/lk_qemu.py (init.c, and fuzz.c
 * and its fuzz_*.c, each of which gets a static copy of say()).
 *
 * say(): print one line on standard output with a single write(2), so
 * that stdio buffering never splits it and another process's output
 * cannot land inside it: the serial console's reader parses by line.
 *
 * read_text(): the start of a small file such as /proc/cmdline as a
 * string, at most size - 1 bytes; its length, or -1.
 */
#ifndef LK_QEMU_SAY_H
#define LK_QEMU_SAY_H

#include <fcntl.h>
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

static inline ssize_t read_text(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

#endif
