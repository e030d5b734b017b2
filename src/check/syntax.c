/* check: node kinds by symbol id and field ids, resolved once per language. */
#include "check_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CK_NAME_ITEM(k, s) [k] = s,
static const char *const kind_names[K_COUNT] = {CK_NODE_KINDS(CK_NAME_ITEM)};
static const char *const field_names[F_COUNT] = {CK_FIELDS(CK_NAME_ITEM)};
#undef CK_NAME_ITEM

int ck_syntax_init(ck_syntax *s)
{
	memset(s, 0, sizeof *s);
	s->lang = tree_sitter_python();
	s->nsym = ts_language_symbol_count(s->lang);
	s->kind = calloc(s->nsym ? s->nsym : 1, sizeof *s->kind);
	if (!s->kind)
		return -ENOMEM;
	/* By name, for every symbol: several symbols can share a name (aliases, a keyword and the
	 * node it introduces), and ts_node_type() comparisons matched them all. */
	for (uint32_t sym = 0; sym < s->nsym; sym++) {
		const char *name = ts_language_symbol_name(s->lang, (TSSymbol)sym);
		if (!name)
			continue;
		for (int k = 1; k < K_COUNT; k++)
			if (kind_names[k][0] == name[0] && strcmp(kind_names[k], name) == 0) {
				s->kind[sym] = (uint8_t)k;
				break;
			}
	}
	for (int f = 0; f < F_COUNT; f++)
		s->field[f] = ts_language_field_id_for_name(s->lang, field_names[f],
							    (uint32_t)strlen(field_names[f]));
	return 0;
}

void ck_syntax_free(ck_syntax *s)
{
	free(s->kind);
	s->kind = NULL;
	s->nsym = 0;
}
