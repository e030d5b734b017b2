/* mcp: the Model Context Protocol server (JSON-RPC 2.0 over stdio, newline-delimited) that
 * offers labbox's commands as tools to agents. The work of each tool call is done by this
 * same binary run as a child (`/proc/self/exe run --json ...`), so the server keeps reading
 * messages while a run goes on, and a cancelled call ends its run as Ctrl-C would (SIGINT
 * to the child's process group: the sandbox tree dies, the run is recorded interrupted).
 *
 * What the tools may do is fixed when the server starts (lb_mcp_limits), never by the
 * client. Functions return 0 or a negative errno unless documented otherwise. */
#ifndef LABBOX_MCP_H
#define LABBOX_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

/* The longest message (one line) the server reads; longer ones are answered with an error
 * and skipped up to their newline. */
#define LB_MCP_MAX_LINE ((size_t)8 << 20)
/* Inline experiment files (the run and check tools' "files"). */
#define LB_MCP_MAX_FILES 256
#define LB_MCP_MAX_FILE_BYTES ((size_t)1 << 20)
#define LB_MCP_MAX_FILES_BYTES ((size_t)4 << 20)
/* Tool calls running at once; more are refused until one ends. */
#define LB_MCP_MAX_JOBS 8

typedef struct lb_mcp_limits {
	bool allow_network; /* --network loopback|host may be asked for */
	bool allow_gpus;    /* --gpus other than none may be asked for */
	double max_budget;  /* seconds; 0: no cap */
	uint64_t max_memory; /* bytes; 0: no cap */
	const char *root;   /* resolved directory experiments must lie under */
	const char *self;   /* the labbox binary children run (default /proc/self/exe) */
	/* --allow-degraded for every run (memory, pids, cpus, disk, all): what the person who
	 * started the server accepts on a host that cannot enforce a limit by a cgroup. */
	const char *degraded[5];
	size_t ndegraded;
} lb_mcp_limits;

/* JSON-RPC 2.0 error codes. */
enum {
	LB_MCP_PARSE_ERROR = -32700,
	LB_MCP_INVALID_REQUEST = -32600,
	LB_MCP_METHOD_NOT_FOUND = -32601,
	LB_MCP_INVALID_PARAMS = -32602,
	LB_MCP_INTERNAL_ERROR = -32603,
};

typedef enum lb_mcp_kind {
	LB_MCP_MSG_INVALID,      /* answer with code/message; id may be NULL */
	LB_MCP_MSG_REQUEST,      /* method + id */
	LB_MCP_MSG_NOTIFICATION, /* method, no id */
	LB_MCP_MSG_RESPONSE,     /* a reply to something the server sent: ignored */
} lb_mcp_kind;

/* One incoming message, parsed defensively: bounded depth, strict JSON, UTF-8 validated. */
typedef struct lb_mcp_msg {
	lb_mcp_kind kind;
	struct json_object *root; /* the parsed message (owned) */
	struct json_object *id;   /* borrowed from root: a string or an integer; NULL if none */
	const char *method;       /* borrowed from root */
	struct json_object *params; /* borrowed: an object or NULL */
	int code;                 /* LB_MCP_MSG_INVALID: the JSON-RPC error */
	char message[160];
} lb_mcp_msg;

/* Parse one line (without its newline). Never fails: an unusable message is kind INVALID. */
void lb_mcp_parse(const char *line, size_t len, lb_mcp_msg *msg);
void lb_mcp_msg_free(lb_mcp_msg *msg);

/* The tools: their list for tools/list (a new array). */
struct json_object *lb_mcp_tools_list(void);

/* A tool call made into the labbox command line to run: argv (NULL-terminated, strings
 * owned), and for inline files the private directory they were staged into (removed by
 * lb_mcp_call_free). */
typedef struct lb_mcp_call {
	char **argv;
	size_t argc;
	char *staged;   /* private directory of inline files, or NULL */
	const char *tool; /* static name */
	bool progress;  /* a long call (run, rerun): worth progress notifications */
} lb_mcp_call;

/* Validate a tools/call's name and arguments against the schemas and the limits, and build
 * the command. Returns 0; or LB_MCP_INVALID_PARAMS with err filled for an unknown tool or
 * arguments of the wrong shape (a protocol error); or 1 with err filled when the call asks
 * for more than the server allows or names what it may not (a tool error the agent reads:
 * limit names the flag, e.g. "max-budget", or is empty). With stage false, inline files are
 * validated but not written (the fuzz target). */
int lb_mcp_call_build(const char *name, struct json_object *args, const lb_mcp_limits *lim,
		      bool stage, lb_mcp_call *call, char *err, size_t errlen, char *limit,
		      size_t limitlen);
void lb_mcp_call_free(lb_mcp_call *call);

/* Whether the recorded configuration of a run (manifest.json's config) stays within the
 * limits, so rerun may repeat it: 0, or 1 with err and limit filled. */
int lb_mcp_config_within(struct json_object *config, const lb_mcp_limits *lim, char *err,
			 size_t errlen, char *limit, size_t limitlen);

/* Serve on in_fd/out_fd until in_fd ends; running calls are then interrupted and waited for.
 * log_fd (or -1) gets one line per problem worth a human's attention. */
int lb_mcp_serve(int in_fd, int out_fd, int log_fd, const lb_mcp_limits *lim);

#endif
