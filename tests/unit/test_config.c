/* The config file parser and the settings table (lib/config.c, daemon/options.c). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "t.h"

#include "../../lib/config.c"
#include "../../daemon/log.c"
#include "../../daemon/options.c"

static char dir[] = "/tmp/profd-test-config.XXXXXX";

static const char *write_file(const char *name, const char *text, size_t len)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	fwrite(text, 1, len, f);
	fclose(f);
	return path;
}
#define WRITE(name, text) write_file(name, text, sizeof(text) - 1)

/* load CONFIG-TEXT with extra flags; returns options_load's result, err in err. */
static int load(struct profd_opts *o, const char *text, char *err, size_t errlen, int nflags, ...)
{
	char *argv[16] = { "profd", "--config", (char *)write_file("c.conf", text, strlen(text)) };
	int argc = 3;
	va_list ap;

	va_start(ap, nflags);
	for (int i = 0; i < nflags && argc < 15; i++)
		argv[argc++] = va_arg(ap, char *);
	va_end(ap);
	options_defaults(o);
	err[0] = 0;
	return options_load(o, argc, argv, err, errlen);
}

struct diff_rec {
	char keys[256];
	int live;
};

static void on_diff(const char *key, const char *old, const char *new, int live, void *arg)
{
	struct diff_rec *r = arg;

	snprintf(r->keys + strlen(r->keys), sizeof(r->keys) - strlen(r->keys), "%s%s", r->keys[0] ? "," : "", key);
	r->live += live;
}

int main(void)
{
	struct profd_opts o, d;
	char err[512];

	if (!mkdtemp(dir))
		return 1;

	/* Comments, blank lines, spacing, trailing comments, '#' inside a value, later lines win. */
	CHECK_EQ_INT(load(&o, "# c\n\n  frequency=49\nflush-interval = 2m   # two minutes\n"
			 "socket = /run/a#b.sock\nfrequency = 50\n\toffcpu = no\n", err, sizeof(err), 0), 0);
	CHECK_EQ_INT(o.frequency, 50);
	CHECK_EQ_INT(o.flush_interval_ns, 120 * SEC);
	CHECK_EQ_STR(o.socket, "/run/a#b.sock");
	CHECK_EQ_INT(o.offcpu, 0);
	CHECK(strstr(o.config, "c.conf") != NULL);

	/* Flags win over the file, in any order relative to --config. */
	CHECK_EQ_INT(load(&o, "frequency = 49\nlog-level = debug\n", err, sizeof(err), 2, "--frequency", "77"), 0);
	CHECK_EQ_INT(o.frequency, 77);
	CHECK_EQ_INT(o.log_level, LOG_LVL_DEBUG);
	CHECK_EQ_INT(load(&o, "offcpu = no\n", err, sizeof(err), 1, "--offcpu"), 0);
	CHECK_EQ_INT(o.offcpu, 1);
	CHECK_EQ_INT(load(&o, "offcpu = yes\n", err, sizeof(err), 1, "--no-offcpu"), 0);
	CHECK_EQ_INT(o.offcpu, 0);
	CHECK_EQ_INT(load(&o, "", err, sizeof(err), 1, "--offcpu=off"), 0);
	CHECK_EQ_INT(o.offcpu, 0);

	/* Refusals name file:line: key and say why. */
	CHECK_EQ_INT(load(&o, "frequency = 49\n# x\nfrequncy = 10\n", err, sizeof(err), 0), -EINVAL);
	CHECK(strstr(err, "c.conf:3: frequncy: unknown key") != NULL);
	CHECK_EQ_INT(load(&o, "\n\nretention = 30s\n", err, sizeof(err), 0), -EINVAL);
	CHECK(strstr(err, "c.conf:3: retention: invalid value '30s'") != NULL);
	CHECK_EQ_INT(load(&o, "max-disk = 12 parsecs\n", err, sizeof(err), 0), -EINVAL);
	CHECK(strstr(err, ":1: max-disk: invalid value") != NULL);
	CHECK_EQ_INT(load(&o, "frequency\n", err, sizeof(err), 0), -EINVAL);
	CHECK(strstr(err, ":1: frequency: expected key = value") != NULL);
	CHECK_EQ_INT(load(&o, "fre quency = 1\n", err, sizeof(err), 0), -EINVAL);
	CHECK(strstr(err, "not a key name") != NULL);
	CHECK_EQ_INT(load(&o, "offcpu = maybe\n", err, sizeof(err), 0), -EINVAL);
	CHECK_EQ_INT(load(&o, "state-dir =\n", err, sizeof(err), 0), -EINVAL);
	CHECK(strstr(err, "must not be empty") != NULL);
	CHECK_EQ_INT(load(&o, "frequency = 4294967297\n", err, sizeof(err), 0), -EINVAL);
	CHECK_EQ_INT(load(&o, "frequency = -1\n", err, sizeof(err), 0), -EINVAL);
	CHECK_EQ_INT(load(&o, "", err, sizeof(err), 2, "--frequency", "0"), -EINVAL);
	CHECK(strstr(err, "for --frequency") != NULL);
	CHECK_EQ_INT(load(&o, "", err, sizeof(err), 1, "--bogus"), -EINVAL);
	CHECK_EQ_INT(load(&o, "", err, sizeof(err), 1, "stray"), -EINVAL);
	{
		char big[CONFIG_MAX_LINE + 64];

		memset(big, 'x', sizeof(big));
		memcpy(big, "socket = ", 9);
		big[sizeof(big) - 2] = '\n';
		big[sizeof(big) - 1] = 0;
		CHECK_EQ_INT(load(&o, big, err, sizeof(err), 0), -EINVAL);
		CHECK(strstr(err, "longer than") != NULL);
	}
	{
		const char *p = write_file("nul.conf", "frequency = 4\0 9\n", 17);
		char *argv[] = { "profd", "--config", (char *)p };

		options_defaults(&o);
		CHECK_EQ_INT(options_load(&o, 3, argv, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "NUL") != NULL);
	}
	{
		char *argv[] = { "profd", "--config", "/nonexistent/profd.conf" };

		options_defaults(&o);
		CHECK_EQ_INT(options_load(&o, 3, argv, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "cannot read /nonexistent/profd.conf") != NULL);
	}

	/* Every value prints in a form that parses back to the same setting. */
	CHECK_EQ_INT(load(&o, "flush-interval = 1500ms\nretention = 90m\nmax-disk = 1536M\ndrain-interval = 250ms\n",
			  err, sizeof(err), 0), 0);
	{
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		print_config(&o, f);
		fclose(f);
		CHECK(strstr(text, "\nflush-interval = 1500ms\n") != NULL);
		CHECK(strstr(text, "\nretention = 90m\n") != NULL);
		CHECK(strstr(text, "\nmax-disk = 1536M\n") != NULL);
		CHECK(strstr(text, "\n#frequency = 99\n") != NULL);
		CHECK_EQ_INT(load(&d, text, err, sizeof(err), 0), 0);
		free(text);
		{
			struct diff_rec r = { "", 0 };

			options_diff(&o, &d, on_diff, &r);
			CHECK_EQ_STR(r.keys, "");
		}
	}

	/* Diff: what changed, and whether a reload applies it. */
	{
		struct diff_rec r = { "", 0 };

		options_defaults(&o);
		d = o;
		d.frequency = 49;
		d.counts_entries = 4096;
		snprintf(d.state_dir, sizeof(d.state_dir), "/srv/p");
		options_diff(&o, &d, on_diff, &r);
		CHECK_EQ_STR(r.keys, "state-dir,frequency,counts-entries");
		CHECK_EQ_INT(r.live, 1);
	}

	unlink(write_file("c.conf", "", 0));
	unlink(write_file("nul.conf", "", 0));
	rmdir(dir);
	T_DONE();
}
