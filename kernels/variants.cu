/*
 * variants.cu - the kernel variants under measurement (rs_kernels.h):
 * which of them this process runs, and their names for $RS_KERNELS.
 */
#include <string.h>

#include "rs_kernels.h"

static const struct {
	const char	*name;
	unsigned	 bit;
} known[] = {
	{ "roundup", RS_K_VAR_ROUNDUP },
	{ "cm", RS_K_VAR_CM },
};

/* read by the launchers on the host thread that launches; set at start */
static unsigned variants;

extern "C" enum rs_status
rs_k_variants_parse(const char *s, unsigned *mask, struct rs_err *err)
{
	unsigned m = 0;

	while (*s != '\0') {
		const size_t n = strcspn(s, ",");
		size_t i;

		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strlen(known[i].name) == n &&
			    strncmp(s, known[i].name, n) == 0)
				break;
		if (i == sizeof(known) / sizeof(known[0]))
			return (rs_errf(err, RS_ERR_INVALID_ARG, "kernel "
			    "variant '%.*s' is unknown (known: roundup, cm)",
			    (int)(n < 40 ? n : 40), s));
		m |= known[i].bit;
		s += n + (s[n] == ',');
	}
	*mask = m;
	return (RS_OK);
}

extern "C" void
rs_k_set_variants(unsigned mask)
{
	variants = mask;
}

extern "C" unsigned
rs_k_variants(void)
{
	return (variants);
}
