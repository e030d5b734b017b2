/* mcp: parsing of incoming JSON-RPC 2.0 messages. Everything here reads what an outside
 * client wrote, so it is bounded (the line length is capped by the reader, the nesting depth
 * here) and trusts no field's type. */
#include "labbox/mcp.h"
#include "labbox/util.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

/* Deep enough for any MCP message (tool arguments included); shallow enough that json-c's
 * recursive free and serialisation cannot exhaust the stack. */
#define MCP_MAX_DEPTH 32

static void invalid(lb_mcp_msg *m, int code, const char *text)
{
	m->kind = LB_MCP_MSG_INVALID;
	m->code = code;
	snprintf(m->message, sizeof m->message, "%s", text);
}
/* Whether a string of the text that is a member's name (a ':' follows it) holds the escape
 * \u0000. Only escapes can put NUL there: a raw NUL byte is refused before. */
static bool nul_in_a_name(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '"')
			continue;
		bool nul = false;
		for (i++; i < len && s[i] != '"'; i++) {
			if (s[i] != '\\')
				continue;
			if (i + 5 < len && s[i + 1] == 'u' && memcmp(s + i + 2, "0000", 4) == 0)
				nul = true;
			i++; /* the escaped character, a quote among them */
		}
		size_t j = i + 1;
		while (j < len && strchr(" \t\r\n", s[j]))
			j++;
		if (nul && j < len && s[j] == ':')
			return true;
	}
	return false;
}


void lb_mcp_parse(const char *line, size_t len, lb_mcp_msg *m)
{
	memset(m, 0, sizeof *m);
	/* A trailing CR (a client writing CRLF) is not part of the message. */
	if (len && line[len - 1] == '\r')
		len--;
	if (len > (size_t)INT32_MAX - 1) {
		invalid(m, LB_MCP_INVALID_REQUEST, "message too long");
		return;
	}
	/* NUL is not JSON whitespace; json-c would stop at it and take a prefix for the whole. */
	if (memchr(line, '\0', len)) {
		invalid(m, LB_MCP_PARSE_ERROR, "parse error: NUL byte in the message");
		return;
	}
	/* json-c keeps a member's name as a C string: "a\u0000b" would be taken as "a" (an
	 * inline file's name cut short, a second key of the same name) */
	if (nul_in_a_name(line, len)) {
		invalid(m, LB_MCP_PARSE_ERROR, "parse error: a member name holds \\u0000, which no "
			"name of labbox's takes");
		return;
	}
	json_tokener *tok = json_tokener_new_ex(MCP_MAX_DEPTH);
	if (!tok) {
		invalid(m, LB_MCP_INTERNAL_ERROR, "out of memory");
		return;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	json_object *root = json_tokener_parse_ex(tok, line, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	if (jerr == json_tokener_continue) {
		/* The text ended inside a value: give the tokener its end. Strict mode takes a
		 * number only when something follows it. */
		json_object_put(root);
		root = json_tokener_parse_ex(tok, " ", 1);
		jerr = json_tokener_get_error(tok);
	}
	size_t used = jerr == json_tokener_success ? json_tokener_get_parse_end(tok) : 0;
	json_tokener_free(tok);
	if (jerr != json_tokener_success) {
		json_object_put(root);
		char text[120];
		/* json-c's word for a document cut short is "continue": what it means is said */
		snprintf(text, sizeof text, "parse error: %s",
			 jerr == json_tokener_continue
				 ? "the line ends before the JSON document does (each message is "
				   "one whole JSON object on one line)"
				 : json_tokener_error_desc(jerr));
		invalid(m, LB_MCP_PARSE_ERROR, text);
		return;
	}
	/* Only whitespace may follow the document on its line. */
	for (size_t i = used; i < len; i++)
		if (!strchr(" \t\r\n", line[i])) {
			json_object_put(root);
			invalid(m, LB_MCP_PARSE_ERROR, "parse error: text after the JSON document");
			return;
		}
	m->root = root;
	if (json_object_is_type(root, json_type_array)) {
		invalid(m, LB_MCP_INVALID_REQUEST,
			"batches are not supported (MCP 2025-06-18 removed them): send one message "
			"per line");
		return;
	}
	if (!json_object_is_type(root, json_type_object)) {
		invalid(m, LB_MCP_INVALID_REQUEST, "a message must be a JSON object");
		return;
	}
	json_object *v;
	/* The id first, so that even an invalid request is answered under its own id. */
	if (json_object_object_get_ex(root, "id", &v)) {
		if (json_object_is_type(v, json_type_string) || json_object_is_type(v, json_type_int))
			m->id = v;
		else if (!json_object_is_type(v, json_type_null)) {
			invalid(m, LB_MCP_INVALID_REQUEST, "id must be a string or an integer");
			return;
		}
	}
	if (!json_object_object_get_ex(root, "jsonrpc", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), "2.0") != 0) {
		invalid(m, LB_MCP_INVALID_REQUEST, "jsonrpc must be \"2.0\"");
		return;
	}
	bool has_method = json_object_object_get_ex(root, "method", &v);
	if (!has_method) {
		if (m->id && (json_object_object_get_ex(root, "result", NULL) ||
			      json_object_object_get_ex(root, "error", NULL))) {
			m->kind = LB_MCP_MSG_RESPONSE;
			return;
		}
		invalid(m, LB_MCP_INVALID_REQUEST, "a request needs a method");
		return;
	}
	if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0) {
		invalid(m, LB_MCP_INVALID_REQUEST, "method must be a non-empty string");
		return;
	}
	m->method = json_object_get_string(v);
	if (json_object_object_get_ex(root, "params", &v) && !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_object)) {
			invalid(m, LB_MCP_INVALID_PARAMS, "params must be an object");
			return;
		}
		m->params = v;
	}
	bool has_id = json_object_object_get_ex(root, "id", NULL);
	if (has_id && !m->id) {
		invalid(m, LB_MCP_INVALID_REQUEST, "id must not be null");
		return;
	}
	m->kind = has_id ? LB_MCP_MSG_REQUEST : LB_MCP_MSG_NOTIFICATION;
}

void lb_mcp_msg_free(lb_mcp_msg *m)
{
	json_object_put(m->root);
	memset(m, 0, sizeof *m);
}
