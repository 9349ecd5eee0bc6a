/* top_live.h — `top --live`, the live view of a running program
 * (cmd/top_live.c); cmd/top.c hands it the command line when --live is on
 * it. */
#ifndef VHEAP_TOP_LIVE_H
#define VHEAP_TOP_LIVE_H

struct vh_command;

/* Runs the live view; the command's exit status. */
int vh_top_live(const struct vh_command *cmd, int argc, char **argv);

#endif
