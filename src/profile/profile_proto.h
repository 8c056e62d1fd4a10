/*
 * profile_proto.h -- the fields of pprof's profile.proto that cpuprof
 * writes (src/profile/pprof_write.c) and reads (cli/pprof_decode.c), by message: the
 * one description of the format both sides share.  Wire types: varint for
 * the integers and bools; length-delimited for messages, strings and
 * packed repeated integers (a reader also takes them unpacked).  String
 * fields other than the table are int64 indexes into string_table.
 */
#ifndef CPUPROF_PROFILE_PROTO_H
#define CPUPROF_PROFILE_PROTO_H

enum {
	/* Profile */
	PROFILE_SAMPLE_TYPE = 1,          /* repeated ValueType */
	PROFILE_SAMPLE = 2,               /* repeated Sample */
	PROFILE_MAPPING = 3,              /* repeated Mapping */
	PROFILE_LOCATION = 4,             /* repeated Location */
	PROFILE_FUNCTION = 5,             /* repeated Function */
	PROFILE_STRING_TABLE = 6,         /* repeated string; [0] is "" */
	PROFILE_DROP_FRAMES = 7,          /* int64 string index */
	PROFILE_KEEP_FRAMES = 8,          /* int64 string index */
	PROFILE_TIME_NANOS = 9,           /* int64 */
	PROFILE_DURATION_NANOS = 10,      /* int64 */
	PROFILE_PERIOD_TYPE = 11,         /* ValueType */
	PROFILE_PERIOD = 12,              /* int64 */
	PROFILE_COMMENT = 13,             /* repeated int64 string index */
	PROFILE_DEFAULT_SAMPLE_TYPE = 14, /* int64 string index */
	/* cpuprof's, which other readers skip (times.h): the unit of the
	 * Samples' times, in ns; absent if they have none. */
	PROFILE_TIME_UNIT_NS = 1001, /* uint64 */

	/* ValueType */
	VALUE_TYPE_TYPE = 1, /* int64 string index */
	VALUE_TYPE_UNIT = 2, /* int64 string index */

	/* Sample */
	SAMPLE_LOCATION_ID = 1, /* repeated uint64; leaf first */
	SAMPLE_VALUE = 2,       /* repeated int64, one per sample_type */
	SAMPLE_LABEL = 3,       /* repeated Label */
	SAMPLE_TIMES = 1001,    /* cpuprof's: bytes, its samples' times (times.h) */

	/* Label */
	LABEL_KEY = 1,      /* int64 string index */
	LABEL_STR = 2,      /* int64 string index */
	LABEL_NUM = 3,      /* int64 */
	LABEL_NUM_UNIT = 4, /* int64 string index */

	/* Mapping */
	MAPPING_ID = 1,                 /* uint64 */
	MAPPING_MEMORY_START = 2,       /* uint64 */
	MAPPING_MEMORY_LIMIT = 3,       /* uint64 */
	MAPPING_FILE_OFFSET = 4,        /* uint64 */
	MAPPING_FILENAME = 5,           /* int64 string index */
	MAPPING_BUILD_ID = 6,           /* int64 string index */
	MAPPING_HAS_FUNCTIONS = 7,      /* bool */
	MAPPING_HAS_FILENAMES = 8,      /* bool */
	MAPPING_HAS_LINE_NUMBERS = 9,   /* bool */
	MAPPING_HAS_INLINE_FRAMES = 10, /* bool */

	/* Location */
	LOCATION_ID = 1,         /* uint64 */
	LOCATION_MAPPING_ID = 2, /* uint64 */
	LOCATION_ADDRESS = 3,    /* uint64 */
	LOCATION_LINE = 4,       /* repeated Line; [0] is the innermost (inlined) */
	LOCATION_IS_FOLDED = 5,  /* bool */

	/* Line */
	LINE_FUNCTION_ID = 1, /* uint64 */
	LINE_LINE = 2,        /* int64 */

	/* Function */
	FUNCTION_ID = 1,          /* uint64 */
	FUNCTION_NAME = 2,        /* int64 string index */
	FUNCTION_SYSTEM_NAME = 3, /* int64 string index */
	FUNCTION_FILENAME = 4,    /* int64 string index */
	FUNCTION_START_LINE = 5,  /* int64 */
};

#endif
