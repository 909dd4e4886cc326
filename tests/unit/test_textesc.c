/* textesc: control characters and invalid UTF-8 become \xHH; the rest is copied. */
#include "textesc.h"
#include "t.h"

#include <stdlib.h>

static void check_esc(const char *in, const char *want)
{
	char *d = textesc__dup(in);

	CHECK_EQ_STR(d, want);
	CHECK_EQ_INT(textesc__clean(in), !strcmp(in, want));
	free(d);
}

int main(void)
{
	char buf[16];

	check_esc("main", "main");
	check_esc("", "");
	check_esc("std::vector<int>::at(unsigned long) a\\b", "std::vector<int>::at(unsigned long) a\\b");
	check_esc("\x1b[2J\x07x", "\\x1b[2J\\x07x");
	check_esc("a\nb\r<0>c\td\x7f", "a\\x0ab\\x0d<0>c\\x09d\\x7f");
	/* UTF-8 passes; C1 controls (U+009B is CSI to some terminals) do not. */
	check_esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	check_esc("\xc2\x9b" "31m", "\\xc2\\x9b31m");
	/* Invalid: stray continuation, truncated, overlong, surrogate, past U+10FFFF, 0xff. */
	check_esc("\x80", "\\x80");
	check_esc("\xe2\x82", "\\xe2\\x82");
	check_esc("\xc0\xaf", "\\xc0\\xaf");
	check_esc("\xe0\x80\xaf", "\\xe0\\x80\\xaf");
	check_esc("\xed\xa0\x80", "\\xed\\xa0\\x80");
	check_esc("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
	check_esc("\xff", "\\xff");

	/* Cut at a whole escape or character, always terminated. */
	CHECK_EQ_INT(textesc__copy(buf, 8, "ab\x1b\x1b"), 6);
	CHECK_EQ_STR(buf, "ab\\x1b");
	CHECK_EQ_INT(textesc__copy(buf, 4, "ab\xe2\x82\xac"), 2);
	CHECK_EQ_STR(buf, "ab");
	CHECK_EQ_INT(textesc__copy(buf, 1, "abc"), 0);
	CHECK_EQ_STR(buf, "");

	snprintf(buf, sizeof(buf), "x\ny");
	CHECK_EQ_INT(textesc__inplace(buf, sizeof(buf)), 0);
	CHECK_EQ_STR(buf, "x\\x0ay");
	snprintf(buf, sizeof(buf), "\a\a\a\a");
	CHECK_EQ_INT(textesc__inplace(buf, sizeof(buf)), 0);
	CHECK_EQ_STR(buf, "\\x07\\x07\\x07");
	T_DONE();
}
