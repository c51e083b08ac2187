/*
 * rs_time.h - the one clock Redshift times itself with (prefill_ms,
 * decode_tok_s, queue times, rs-bench): CLOCK_MONOTONIC, which never jumps
 * with the wall clock (NTP, settimeofday), so a difference of two readings
 * is an elapsed time.  Thread-safe, never fails on Linux.
 */
#ifndef RS_TIME_H
#define RS_TIME_H

/* Milliseconds since an unspecified fixed point: only differences mean
   anything.  A double holds them to the nanosecond for 100 days. */
double	rs_time_ms(void);

#endif /* RS_TIME_H */
