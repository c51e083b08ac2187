/*
 * nvrtc-ptx.c - compile one CUDA source to PTX with NVRTC, printing its
 * log: CUDA 12.9's own front end (the wheel nvidia-cuda-nvrtc-cu12) as a
 * check of the kernels' device code for compute_70, where PyPI has no
 * 12.x nvcc (scripts/cuda129-nvrtc.sh runs it over kernels/).
 *
 *   nvrtc-ptx FILE.cu OUT.ptx [NVRTC option ...]
 *
 * Exit 0 when it compiled (OUT.ptx written), 1 when it did not, 2 on a
 * usage error.
 */
#include <stdio.h>
#include <stdlib.h>

#include <nvrtc.h>

#include "slurp.h"

int
main(int argc, char **argv)
{
	nvrtcProgram	 prog;
	nvrtcResult	 r;
	size_t		 n;
	char		*src, *log, *ptx;
	FILE		*f;

	if (argc < 3) {
		fprintf(stderr, "usage: nvrtc-ptx FILE.cu OUT.ptx "
		    "[option ...]\n");
		return (2);
	}
	if ((src = slurp(argv[1], NULL)) == NULL)
		return (1);
	if ((r = nvrtcCreateProgram(&prog, src, argv[1], 0, NULL, NULL)) !=
	    NVRTC_SUCCESS) {
		fprintf(stderr, "%s: %s\n", argv[1], nvrtcGetErrorString(r));
		return (1);
	}
	r = nvrtcCompileProgram(prog, argc - 3, (const char *const *)argv + 3);
	if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1 &&
	    (log = malloc(n)) != NULL) {
		if (nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS)
			fputs(log, stderr);
		free(log);
	}
	if (r != NVRTC_SUCCESS) {
		fprintf(stderr, "%s: %s\n", argv[1], nvrtcGetErrorString(r));
		return (1);
	}
	if (nvrtcGetPTXSize(prog, &n) != NVRTC_SUCCESS ||
	    (ptx = malloc(n)) == NULL || nvrtcGetPTX(prog, ptx) !=
	    NVRTC_SUCCESS) {
		fprintf(stderr, "%s: no PTX\n", argv[1]);
		return (1);
	}
	/* N counts the terminating NUL */
	if ((f = fopen(argv[2], "w")) == NULL ||
	    fwrite(ptx, 1, n - 1, f) != n - 1 || fclose(f) != 0) {
		perror(argv[2]);
		return (1);
	}
	free(ptx);
	free(src);
	nvrtcDestroyProgram(&prog);
	return (0);
}
