/*
 * check_fit.c - rs_fit_check(): weights + scratch + slots × state against
 * a device's free memory, with made-up free bytes (no GPU needed).
 */
#include <stdint.h>
#include <string.h>

#include <check.h>

#include "rs_fit.h"
#include "rs_model.h"
#include "t_util.h"

#define MIB	((uint64_t)1 << 20)
#define GIB	((uint64_t)1 << 30)

/* 10 GiB of weights, 1 GiB of scratch; a slot of 1024 positions: 2 MiB
 * of KV cache per position, 0.5 GiB recurrent state and checkpoint. */
static struct rs_fit
sample(int slots, uint64_t avail)
{
	struct rs_fit f;

	memset(&f, 0, sizeof(f));
	f.weights = 10 * GIB;
	f.scratch = GIB;
	f.n_ctx = 1024;
	f.slots = slots;
	f.slot.kv = 2 * GIB;
	f.slot.gdn = GIB / 2;
	f.slot.checkpoint = GIB / 2;
	f.slot.total = 3 * GIB;
	f.avail = avail;
	return (f);
}

/* A fake memory check: fits up to *CTX snapshots; counts its calls. */
static int fit_calls;

static int
fits_up_to(int n_snap, void *ctx)
{
	fit_calls++;
	return (n_snap <= *(const int *)ctx);
}

/*
 * rs_fit_drafts: the default drafter halves its drafts a pass until its
 * snapshots fit, down to none, and says when not even none fits.
 */
START_TEST(drafts_give_way)
{
	static const struct {
		int	k, max_snap, want, calls;
	} cases[] = {
		{ 4, 100, 4, 1 },	/* fits as asked */
		{ 4, 4, 2, 2 },		/* 5 snapshots no, 3 yes */
		{ 4, 2, 1, 3 },		/* 5, 3 no; 2 yes */
		{ 4, 1, 0, 4 },		/* 5, 3, 2 no; none yes */
		{ 4, -1, -1, 4 },	/* not even without drafts */
		{ 16, 9, 8, 2 },	/* 17 no, 9 yes */
		{ 3, 2, 1, 2 },		/* 4 no, 2 yes */
		{ 0, 0, 0, 1 },		/* no drafter: one check */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fit_calls = 0;
		ck_assert_int_eq(rs_fit_drafts(cases[i].k, fits_up_to,
		    (void *)&cases[i].max_snap), cases[i].want);
		ck_assert_int_eq(fit_calls, cases[i].calls);
	}
}
END_TEST

START_TEST(fits_exactly)
{
	uint64_t		need = 11 * GIB + 2 * 3 * GIB + RS_FIT_RESERVE;
	struct rs_fit		f = sample(2, need);
	struct rs_fit_result	r;
	struct rs_buf		msg;

	rs_buf_init(&msg);
	ck_assert_int_eq(rs_fit_check(&f, "GPU", &r, &msg), 1);
	ck_assert_uint_eq(r.need, need);
	ck_assert_int_eq(r.max_slots, 2);
	ck_assert_int_eq(r.max_ctx, 1024);
	ck_assert_uint_eq(msg.len, 0);	/* nothing to say */
	rs_buf_cleanup(&msg);
}
END_TEST

START_TEST(one_byte_short)
{
	uint64_t		need = 11 * GIB + 2 * 3 * GIB + RS_FIT_RESERVE;
	struct rs_fit		f = sample(2, need - 1);
	struct rs_fit_result	r;
	struct rs_buf		msg;

	rs_buf_init(&msg);
	ck_assert_int_eq(rs_fit_check(&f, "GPU", &r, &msg), 0);
	ck_assert_int_eq(r.max_slots, 1);
	/* (6 GiB - 1) / 2 slots - 1 GiB fixed, at 2 MiB a position */
	ck_assert_int_eq(r.max_ctx, 1023);
	rs_buf_addc(&msg, '\0');
	ck_assert_msg(strstr(msg.data, "not enough GPU memory for --ctx 1024 "
	    "--slots 2: needs 17.25 GiB, 17.25 GiB free\n") == msg.data,
	    "%s", msg.data);
	ck_assert_msg(strstr(msg.data, "weights 10.00 GiB + scratch 1.00 GiB "
	    "+ 2 slots x 3.00 GiB + reserve 0.25 GiB\n") != NULL, "%s",
	    msg.data);
	ck_assert_msg(strstr(msg.data, "KV cache 2.00 GiB, MTP KV cache 0.00 "
	    "GiB, recurrent state 0.500 GiB, snapshots 0.000 GiB, checkpoint "
	    "0.500 GiB\n") != NULL, "%s", msg.data);
	ck_assert_msg(strstr(msg.data, "would fit: --slots 1 at --ctx 1024, "
	    "or --ctx 1023 with --slots 2\n") != NULL, "%s", msg.data);
	rs_buf_cleanup(&msg);
}
END_TEST

START_TEST(not_even_the_weights)
{
	struct rs_fit		f = sample(1, 8 * GIB);
	struct rs_fit_result	r;
	struct rs_buf		msg;

	rs_buf_init(&msg);
	ck_assert_int_eq(rs_fit_check(&f, "GPU", &r, &msg), 0);
	ck_assert_int_eq(r.max_slots, 0);
	ck_assert_int_eq(r.max_ctx, 0);
	rs_buf_addc(&msg, '\0');
	ck_assert_msg(strstr(msg.data, "would fit: not one slot at --ctx 1024, "
	    "and no --ctx with --slots 1\n") != NULL, "%s", msg.data);
	rs_buf_cleanup(&msg);
}
END_TEST

/* A plan of the tiny model at N_CTX positions, f16 KV as on the GPU. */
static struct rs_fit
tiny(const struct rs_model *m, int32_t n_ctx, int slots, uint64_t avail)
{
	struct rs_state_opts	so = { .n_ctx = n_ctx, .n_snap = 4,
				    .checkpoint = 1 };
	struct rs_fit		f;

	memset(&f, 0, sizeof(f));
	f.weights = 100 * MIB;
	f.scratch = 10 * MIB;
	f.n_ctx = n_ctx;
	f.slots = slots;
	f.avail = avail;
	rs_state_plan(m, &so, 2, &f.slot);
	return (f);
}

/* The suggested --ctx and --slots fit, with the real plan's terms. */
START_TEST(suggestion_fits)
{
	struct rs_model		*m;
	struct rs_err		 err;
	struct rs_fit		 f;
	struct rs_fit_result	 r, r2;
	uint64_t		 avail = 4 * GIB;	/* 3 slots of 1M */

	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q8_0.gguf"),
	    &err), RS_OK);
	f = tiny(m, 1 << 20, 4, avail);
	ck_assert_int_eq(rs_fit_check(&f, "GPU", &r, NULL), 0);
	ck_assert_int_gt(r.max_ctx, 0);
	ck_assert_int_lt(r.max_ctx, 1 << 20);
	ck_assert_int_eq(r.max_slots, 3);
	f = tiny(m, r.max_ctx, 4, avail);
	ck_assert_int_eq(rs_fit_check(&f, "GPU", &r2, NULL), 1);
	f = tiny(m, r.max_ctx + 1024, 4, avail);
	ck_assert_int_eq(rs_fit_check(&f, "GPU", NULL, NULL), 0);
	f = tiny(m, 1 << 20, (int)r.max_slots, avail);
	ck_assert_int_eq(rs_fit_check(&f, "GPU", NULL, NULL), 1);
	f = tiny(m, 1 << 20, (int)r.max_slots + 1, avail);
	ck_assert_int_eq(rs_fit_check(&f, "GPU", NULL, NULL), 0);
	rs_model_close(m);
}
END_TEST

/*
 * A layer split over GPUs 0 and 1 (slots 0, 1) and GPU 0 again (slot 2):
 * GPU 0 holds slots 0 and 2, so it fits only if both fit together; GPU 1
 * is checked alone.  The message names the GPU that does not fit and its
 * blocks.
 */
START_TEST(split_per_gpu)
{
	struct rs_split	 sp = { .n = 3, .dev = { 0, 1, 0 },
	    .first = { 0, 10, 40, 64 } };
	struct rs_split_mem mem[3];
	uint64_t	 fr[3];
	struct rs_buf	 msg;

	for (int j = 0; j < 3; j++) {
		mem[j].weights = 4 * GIB;
		mem[j].scratch = GIB;
		mem[j].state = 2 * GIB;
		mem[j].total = 7 * GIB;
	}
	/* after the engine: GPU 0 had 14 GiB + reserve, GPU 1 7 GiB + reserve */
	fr[0] = fr[2] = 14 * GIB + RS_FIT_RESERVE - 10 * GIB;
	fr[1] = 7 * GIB + RS_FIT_RESERVE - 5 * GIB;
	rs_buf_init(&msg);
	ck_assert_int_eq(rs_fit_split_check(&sp, mem, fr, 4096, 1, &msg), 1);
	ck_assert_uint_eq(msg.len, 0);
	/* one byte less on GPU 1 */
	fr[1]--;
	ck_assert_int_eq(rs_fit_split_check(&sp, mem, fr, 4096, 1, &msg), 0);
	rs_buf_addc(&msg, '\0');
	ck_assert_msg(strstr(msg.data, "not enough memory on GPU 1 for --ctx "
	    "4096 --slots 1") == msg.data, "%s", msg.data);
	ck_assert_msg(strstr(msg.data, "blocks 10-39: weights 4.00 GiB") !=
	    NULL, "%s", msg.data);
	ck_assert_msg(strstr(msg.data, "GPU 0") == NULL, "%s", msg.data);
	ck_assert_msg(strstr(msg.data, "--split") != NULL, "%s", msg.data);
	rs_buf_cleanup(&msg);
	/* GPU 0 one byte short: both its slots named */
	fr[1]++;
	fr[0] = fr[2] = fr[0] - 1;
	rs_buf_init(&msg);
	ck_assert_int_eq(rs_fit_split_check(&sp, mem, fr, 4096, 1, &msg), 0);
	rs_buf_addc(&msg, '\0');
	ck_assert_msg(strstr(msg.data, "blocks 0-9") != NULL &&
	    strstr(msg.data, "blocks 40-63") != NULL, "%s", msg.data);
	rs_buf_cleanup(&msg);
}
END_TEST

Suite *
fit_suite(void)
{
	Suite	*s = suite_create("fit");
	TCase	*tc;

	tc = tcase_create("decision");
	tcase_add_test(tc, fits_exactly);
	tcase_add_test(tc, drafts_give_way);
	tcase_add_test(tc, one_byte_short);
	tcase_add_test(tc, not_even_the_weights);
	tcase_add_test(tc, split_per_gpu);
	suite_add_tcase(s, tc);
	tc = tcase_create("plan");
	tcase_add_test(tc, suggestion_fits);
	suite_add_tcase(s, tc);
	return (s);
}
