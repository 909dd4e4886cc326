/* Calls plugin_spin from a library it dlopen()s at run time. Usage: sym_dlopen LIBRARY CPU_SECONDS */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	void (*spin)(double);
	void *h;

	if (argc < 3) {
		fprintf(stderr, "usage: sym_dlopen LIBRARY CPU_SECONDS\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	spin = (void (*)(double))dlsym(h, "plugin_spin");
	if (!spin)
		return 1;
	spin(atof(argv[2]));
	return 0;
}
