/*
 * fatbinary.c - the part of NVIDIA's `fatbinary` tool that clang's CUDA
 * driver calls, built on libnvfatbin (nvidia-nvfatbin-cu12), because the
 * CUDA 12.9 wheels on PyPI ship no fatbinary program and CUDA 13's no
 * longer takes the --image= form clang passes.  scripts/cuda129.sh builds
 * it into the assembled tree's bin/, where clang looks for it.
 *
 *   fatbinary -64 --create OUT --image=profile=sm_70,file=A.cubin \
 *       --image=profile=compute_70,file=A.ptx
 *
 * profile=sm_XX adds a cubin, profile=compute_XX a PTX text (JIT-compiled
 * by the driver on newer GPUs).  Exit 0 on success, 1 on a failure (with a
 * message on stderr), 2 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvFatbin.h>

#include "slurp.h"

static int	 add_image(nvFatbinHandle, const char *);

int
main(int argc, char **argv)
{
	nvFatbinHandle	 fb;
	nvFatbinResult	 r;
	const char	*opts[] = { "-64" }, *out = NULL;
	size_t		 size;
	void		*buf;
	FILE		*f;
	int		 i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-64") == 0)
			continue;
		if (strcmp(argv[i], "--create") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (strncmp(argv[i], "--create=", 9) == 0)
			out = argv[i] + 9;
		else if (strncmp(argv[i], "--image=", 8) != 0) {
			fprintf(stderr, "fatbinary: unknown option %s\n",
			    argv[i]);
			return (2);
		}
	}
	if (out == NULL) {
		fprintf(stderr, "usage: fatbinary [-64] --create OUT "
		    "--image=profile=P,file=F ...\n");
		return (2);
	}
	if ((r = nvFatbinCreate(&fb, opts, 1)) != NVFATBIN_SUCCESS) {
		fprintf(stderr, "fatbinary: %s\n", nvFatbinGetErrorString(r));
		return (1);
	}
	for (i = 1; i < argc; i++)
		if (strncmp(argv[i], "--image=", 8) == 0 &&
		    add_image(fb, argv[i] + 8) != 0)
			return (1);
	if ((r = nvFatbinSize(fb, &size)) != NVFATBIN_SUCCESS ||
	    (buf = malloc(size)) == NULL ||
	    (r = nvFatbinGet(fb, buf)) != NVFATBIN_SUCCESS) {
		fprintf(stderr, "fatbinary: %s\n", nvFatbinGetErrorString(r));
		return (1);
	}
	if ((f = fopen(out, "wb")) == NULL ||
	    fwrite(buf, 1, size, f) != size || fclose(f) != 0) {
		perror(out);
		return (1);
	}
	free(buf);
	nvFatbinDestroy(&fb);
	return (0);
}

/*
 * Add the image described by SPEC ("profile=sm_70,file=x.cubin" or
 * "profile=compute_70,file=x.ptx") to FB.  Returns 0, or 1 after a message.
 */
static int
add_image(nvFatbinHandle fb, const char *spec)
{
	nvFatbinResult	 r;
	char		 prof[32], *data;
	const char	*file, *arch;
	size_t		 size;

	if (strncmp(spec, "profile=", 8) != 0 ||
	    (file = strstr(spec, ",file=")) == NULL ||
	    (size_t)(file - spec - 8) >= sizeof(prof)) {
		fprintf(stderr, "fatbinary: bad --image=%s\n", spec);
		return (1);
	}
	memcpy(prof, spec + 8, file - spec - 8);
	prof[file - spec - 8] = '\0';
	file += 6;
	if ((data = slurp(file, &size)) == NULL)
		return (1);
	if (strncmp(prof, "sm_", 3) == 0) {
		arch = prof + 3;
		r = nvFatbinAddCubin(fb, data, size, arch, file);
	} else if (strncmp(prof, "compute_", 8) == 0) {
		arch = prof + 8;
		/* the size counts the terminating NUL slurp() appended */
		r = nvFatbinAddPTX(fb, data, size + 1, arch, file, "");
	} else {
		fprintf(stderr, "fatbinary: unknown profile %s\n", prof);
		free(data);
		return (1);
	}
	free(data);
	if (r != NVFATBIN_SUCCESS) {
		fprintf(stderr, "fatbinary: %s: %s\n", file,
		    nvFatbinGetErrorString(r));
		return (1);
	}
	return (0);
}
