/*
** help_topics.h — help() for what is not a function: keywords (?for, ?if) and operators
** (?"%*%", ?"+"), one table of texts (help_topics.c), read by help() and the REPL's ?.
*/
#ifndef MLS_HELP_TOPICS_H
#define MLS_HELP_TOPICS_H

#include <stdbool.h>

/* The help text of keyword or operator topic, or NULL. */
const char *help_topic(const char *topic);
/* The i-th topic's name (NULL past the end), for help()'s list and the suggestions. */
const char *help_topic_name(int i);

#endif
