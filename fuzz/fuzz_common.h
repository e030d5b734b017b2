/* Shared by the fuzz targets: what every JSON document labbox builds must satisfy. */
#ifndef LABBOX_FUZZ_COMMON_H
#define LABBOX_FUZZ_COMMON_H

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

/* The serialized document must read back under a strict, UTF-8 validating parser: labbox's
 * output never carries bare NaN, invalid UTF-8 or json-c's lenient number spellings. */
static inline void fuzz_assert_strict_json(struct json_object *doc)
{
	const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	struct json_tokener *tok = json_tokener_new();
	struct json_object *back;

	if (!tok)
		abort();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	back = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
	if (!back && doc)
		abort();
	json_object_put(back);
	json_tokener_free(tok);
}

#endif
