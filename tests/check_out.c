/*
 * check_out.c - output files: a temporary file renamed over a regular
 * target, planted links never followed, FIFOs and devices written in place,
 * directories refused, the temporary file gone after SIGTERM (rs_out.h);
 * and the commands that write files (rs-verify --logits on a FIFO,
 * rs-bench --synth with a link planted at OUT.tmp, issue #15).
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "rs_out.h"
#include "t_util.h"

/* Entries of DIR whose name starts with PREFIX. */
static int
count_prefix(const char *dir, const char *prefix)
{
	DIR		*d = opendir(dir);
	struct dirent	*de;
	int		 n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL)
		n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return (n);
}

static void
write_all(const char *path, const char *data, int flags)
{
	struct rs_out	o;
	struct rs_err	err = { 0 };

	ck_assert_int_eq(rs_out_open(&o, path, flags, &err), RS_OK);
	ck_assert_int_eq(fputs(data, o.fp) >= 0, 1);
	ck_assert_int_eq(rs_out_commit(&o, &err), RS_OK);
}

START_TEST(regular)
{
	const char	*dir = t_tmpdir();
	char		 path[512];
	size_t		 n;
	char		*got;

	snprintf(path, sizeof(path), "%s/a.bin", dir);
	write_all(path, "one", 0);
	write_all(path, "second", 0);	/* replaces a regular file */
	got = t_read_file(path, &n);
	ck_assert_uint_eq(n, 6);
	ck_assert_int_eq(memcmp(got, "second", 6), 0);
	free(got);
	ck_assert_int_eq(count_prefix(dir, "a.bin.tmp"), 0);
}
END_TEST

START_TEST(planted_links)
{
	/* links planted at every name the temporary file could take first */
	const char	*dir = t_tmpdir();
	char		 path[512], victim[512], link[600];
	struct stat	 sb;
	size_t		 n;
	char		*got;

	snprintf(path, sizeof(path), "%s/out.gguf", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	t_write_file(victim, "keep", 4);
	snprintf(link, sizeof(link), "%s.tmp", path);
	ck_assert_int_eq(symlink(victim, link), 0);
	snprintf(link, sizeof(link), "%s.tmp.%ld.0", path, (long)getpid());
	ck_assert_int_eq(symlink(victim, link), 0);
	write_all(path, "data", 0);
	got = t_read_file(victim, &n);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(memcmp(got, "keep", 4), 0);
	free(got);
	ck_assert_int_eq(lstat(path, &sb), 0);
	ck_assert(S_ISREG(sb.st_mode));
	ck_assert_int_eq(lstat(link, &sb), 0);	/* left alone */
	ck_assert(S_ISLNK(sb.st_mode));
}
END_TEST

/* A FIFO at the path stays a FIFO and gets the data, seekable or not. */
START_TEST(fifo)
{
	const char	*dir = t_tmpdir();
	char		 path[512], buf[64];
	struct stat	 sb;
	int		 rfd;
	ssize_t		 n;

	snprintf(path, sizeof(path), "%s/f.npy", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	/* a reader first, so that opening for writing does not block */
	rfd = open(path, O_RDONLY | O_NONBLOCK);
	ck_assert_int_ge(rfd, 0);
	write_all(path, "through the fifo", _i ? RS_OUT_SEEKABLE : 0);
	n = read(rfd, buf, sizeof(buf));
	ck_assert_int_eq(n, 16);
	ck_assert_int_eq(memcmp(buf, "through the fifo", 16), 0);
	close(rfd);
	ck_assert_int_eq(lstat(path, &sb), 0);
	ck_assert(S_ISFIFO(sb.st_mode));
	ck_assert_int_eq(count_prefix(dir, "f.npy.tmp"), 0);
}
END_TEST

START_TEST(devices)
{
	struct rs_out	o;
	struct rs_err	err = { 0 };
	struct stat	sb;

	write_all("/dev/null", "gone", RS_OUT_SEEKABLE);
	ck_assert_int_eq(stat("/dev/null", &sb), 0);
	ck_assert(S_ISCHR(sb.st_mode));
	/* /dev/full: the write fails and is reported; the device stays */
	ck_assert_int_eq(rs_out_open(&o, "/dev/full", 0, &err), RS_OK);
	fputs("x", o.fp);
	ck_assert_int_eq(rs_out_commit(&o, &err), RS_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err.msg, "write"));
	ck_assert_int_eq(stat("/dev/full", &sb), 0);
	ck_assert(S_ISCHR(sb.st_mode));
}
END_TEST

START_TEST(refused)
{
	struct rs_out	o;
	struct rs_err	err = { 0 };
	char		path[512];

	ck_assert_int_eq(rs_out_open(&o, t_tmpdir(), 0, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "directory"));
	ck_assert_int_eq(rs_out_open(&o, "", 0, &err), RS_ERR_INVALID_ARG);
	snprintf(path, sizeof(path), "%s/no/such/dir/x", t_tmpdir());
	ck_assert_int_eq(rs_out_open(&o, path, 0, &err), RS_ERR_IO);
}
END_TEST

START_TEST(abort_removes)
{
	const char	*dir = t_tmpdir();
	struct rs_out	 o;
	struct rs_err	 err = { 0 };
	char		 path[512];

	snprintf(path, sizeof(path), "%s/x", dir);
	ck_assert_int_eq(rs_out_open(&o, path, 0, &err), RS_OK);
	fputs("partial", o.fp);
	rs_out_abort(&o);
	rs_out_abort(&o);	/* twice is harmless */
	ck_assert_int_eq(count_prefix(dir, "x"), 0);
}
END_TEST

/* SIGPIPE and SIGUSR1 too: `| head -1` left a .npy.tmp behind */
START_TEST(signal_cleanup)
{
	static const int sigs[] = { SIGTERM, SIGPIPE, SIGUSR1 };
	const char	*dir = t_tmpdir();
	char		 path[512];
	pid_t		 pid;
	int		 status;

	snprintf(path, sizeof(path), "%s/big.gguf", dir);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		if ((pid = fork()) == 0) {
			struct rs_out	o;
			struct rs_err	err = { 0 };

			signal(sigs[i], SIG_DFL);	/* (inherited IGN) */
			rs_out_trap_signals();
			if (rs_out_open(&o, path, 0, &err) != RS_OK ||
			    fputs("partial", o.fp) < 0 || fflush(o.fp) != 0)
				_exit(3);
			raise(sigs[i]);
			_exit(4);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) ==
		    sigs[i], "signal %d: child status %#x", sigs[i], status);
		ck_assert_int_eq(count_prefix(dir, "big.gguf"), 0);
	}
}
END_TEST

/*
 * rs-verify --logits with stdout closed (`>&-`): a write error, exit 2,
 * and no .npy (the file took descriptor 1 and the JSON lines went into
 * it, kept); and killed by SIGPIPE (`| head`) it leaves no temporary.
 */
START_TEST(verify_stdout_gone)
{
	const char	*dir = t_tmpdir();
	char		 c[2048], in[512];
	FILE		*fp;

	snprintf(c, sizeof(c), "%s -m %s --tokens 1,2 --logits '%s/c.npy' -q "
	    ">&-", t_bin("rs-verify"), t_fixture("tiny/model-f16.gguf"), dir);
	ck_assert_int_eq(t_run(c, NULL), 2);
	ck_assert_int_eq(count_prefix(dir, "c.npy"), 0);
	/* stdin closed: a read error, not an empty input (exit 0) */
	snprintf(c, sizeof(c), "%s -m %s -j <&-", t_bin("rs-tokenize"),
	    t_fixture("tiny/model-f16.gguf"));
	ck_assert_int_eq(t_run(c, NULL), 2);
	snprintf(in, sizeof(in), "%s/in.jsonl", dir);
	ck_assert((fp = fopen(in, "w")) != NULL);
	for (int i = 0; i < 3000; i++)
		fputs("{\"tokens\":[1,2,3,4]}\n", fp);
	ck_assert(fclose(fp) == 0);
	/* (the status: rs-verify ran and SIGPIPE ended it, 128 + 13) */
	snprintf(c, sizeof(c), "env --default-signal=PIPE bash -c \"%s -m %s "
	    "--logits '%s/p.npy' -q < '%s' | head -c 1 >/dev/null; exit "
	    "\\${PIPESTATUS[0]}\"", t_bin("rs-verify"),
	    t_fixture("tiny/model-f16.gguf"), dir, in);
	ck_assert_int_eq(t_run(c, NULL), 141);
	ck_assert_int_eq(count_prefix(dir, "p.npy"), 0);
}
END_TEST

/* The reproduction: rs-verify --logits f.npy with f.npy a FIFO. */
START_TEST(verify_fifo)
{
	const char	*dir = t_tmpdir();
	char		 c[2048], fifo[512], got[512];
	struct stat	 sb;
	struct t_npy	 a;

	snprintf(fifo, sizeof(fifo), "%s/f.npy", dir);
	snprintf(got, sizeof(got), "%s/got.npy", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	snprintf(c, sizeof(c), "cat '%s' > '%s' & %s -m %s --tokens 1,2 "
	    "--logits '%s' -q >/dev/null; rc=$?; wait; exit $rc", fifo, got,
	    t_bin("rs-verify"), t_fixture("tiny/model-f16.gguf"), fifo);
	ck_assert_int_eq(t_run(c, NULL), 0);
	ck_assert_int_eq(lstat(fifo, &sb), 0);
	ck_assert_msg(S_ISFIFO(sb.st_mode), "the FIFO was replaced");
	t_npy_load(got, &a);
	ck_assert_int_eq(a.ndim, 2);
	ck_assert_int_eq(a.shape[0], 2);
	free(a.data);
}
END_TEST

/* rs-bench --synth tiny -o OUT with a link planted at OUT.tmp. */
START_TEST(synth_planted)
{
	const char	*dir = t_tmpdir();
	char		 c[2048], out[512], victim[512], link[600];
	size_t		 n;
	char		*data;

	snprintf(out, sizeof(out), "%s/m.gguf", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(link, sizeof(link), "%s.tmp", out);
	t_write_file(victim, "keep", 4);
	ck_assert_int_eq(symlink(victim, link), 0);
	snprintf(c, sizeof(c), "%s --synth tiny -o '%s' 2>/dev/null",
	    t_bin("rs-bench"), out);
	ck_assert_int_eq(t_run(c, NULL), 0);
	data = t_read_file(victim, &n);
	ck_assert_uint_eq(n, 4);
	free(data);
	data = t_read_file(out, &n);
	ck_assert_int_eq(memcmp(data, "GGUF", 4), 0);
	free(data);
}
END_TEST

/*
 * rs-bench --synth 27b (17 GB) interrupted by SIGINT as soon as its
 * temporary file exists: the file goes, the status says SIGINT.
 */
START_TEST(synth_interrupted)
{
	const char	*dir = t_tmpdir();
	char		 out[512];
	pid_t		 pid;
	int		 status, seen = 0;

	snprintf(out, sizeof(out), "%s/big.gguf", dir);
	if ((pid = fork()) == 0) {
		/* a shell's background job would ignore SIGINT: not here */
		signal(SIGINT, SIG_DFL);
		execl(t_bin("rs-bench"), "rs-bench", "--synth", "27b", "-q",
		    "-o", out, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	for (int i = 0; i < 2000 && !seen; i++) {
		seen = count_prefix(dir, "big.gguf.tmp") > 0;
		if (!seen)
			usleep(5000);
	}
	kill(pid, seen ? SIGINT : SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(seen, "no temporary file appeared");
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT,
	    "rs-bench status %#x", status);
	ck_assert_int_eq(count_prefix(dir, "big.gguf"), 0);
}
END_TEST

/*
 * rs-bench --synth tiny under a file-size limit it runs into (ulimit -f:
 * SIGXFSZ ended it with its temporary file left): a write error, exit 2,
 * no file left, an existing output untouched.
 */
START_TEST(synth_file_limit)
{
	const char	*dir = t_tmpdir();
	char		 out[512], c[1600], *msg, *data;
	size_t		 n;

	snprintf(out, sizeof(out), "%s/lim.gguf", dir);
	t_write_file(out, "ORIG", 4);
	snprintf(c, sizeof(c), "ulimit -f 64 && exec %s --synth tiny -q -o "
	    "%s 2>&1", t_bin("rs-bench"), out);
	ck_assert_int_eq(t_run(c, &msg), 2);
	ck_assert_msg(strstr(msg, "lim.gguf") != NULL, "%s", msg);
	free(msg);
	ck_assert_int_eq(count_prefix(dir, "lim.gguf"), 1);
	data = t_read_file(out, &n);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(memcmp(data, "ORIG", 4), 0);
	free(data);
}
END_TEST

Suite *
out_suite(void)
{
	Suite	*s = suite_create("out");
	TCase	*tc = tcase_create("files");
	TCase	*cmd = tcase_create("commands");

	tcase_add_test(tc, regular);
	tcase_add_test(tc, planted_links);
	tcase_add_loop_test(tc, fifo, 0, 2);
	tcase_add_test(tc, devices);
	tcase_add_test(tc, refused);
	tcase_add_test(tc, abort_removes);
	tcase_add_test(tc, signal_cleanup);
	suite_add_tcase(s, tc);
	tcase_set_timeout(cmd, 60);
	tcase_add_test(cmd, verify_fifo);
	tcase_add_test(cmd, verify_stdout_gone);
	tcase_add_test(cmd, synth_planted);
	tcase_add_test(cmd, synth_interrupted);
	tcase_add_test(cmd, synth_file_limit);
	suite_add_tcase(s, cmd);
	return (s);
}
