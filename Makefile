# profd: one entry point for build, test, run and install.
PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build

CC      ?= cc
CLANG   ?= clang
BPFTOOL ?= bpftool

ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

WARN     := -Wall -Wextra -Werror -Wno-unused-parameter
CFLAGS   ?= -O2 -g
CFLAGS   += $(WARN) -std=gnu11 -fno-omit-frame-pointer -D_GNU_SOURCE -MMD -MP
CPPFLAGS += -Ilib -Ibpf -I$(BUILD)
# Each program links what it uses: profd no libunwind (only the test tools
# check against it), profctl no libbpf (it reads the store, never the kernel).
PROFD_LIBS   := -lbpf -lelf -lzstd -llzma -lz -lm
PROFCTL_LIBS := -lzstd -lz -lm -ldl
TEST_LIBS    := -lbpf -lelf -ldw -lunwind-generic -lunwind-ptrace -lunwind -lzstd -llzma -lz -lm

BPF_CFLAGS := -O2 -g -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Ibpf

LIB_SRC  := $(sort $(wildcard lib/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
DMN_SRC  := $(sort $(wildcard daemon/*.c))
DMN_OBJ  := $(DMN_SRC:%.c=$(BUILD)/%.o)
CLI_SRC  := $(sort $(wildcard cli/*.c))
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
BPF_SRC  := $(sort $(wildcard bpf/*.bpf.c))
BPF_OBJ  := $(BPF_SRC:bpf/%.bpf.c=$(BUILD)/bpf/%.bpf.o)
SKELS    := $(BPF_SRC:bpf/%.bpf.c=$(BUILD)/%.skel.h)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tests/tools/%)
TP_SRC   := $(sort $(wildcard tests/testprogs/*.c tests/testprogs/*.cc))
TP_BIN   := $(patsubst tests/testprogs/%,$(BUILD)/testprogs/%,$(basename $(TP_SRC)))

.SECONDARY:
.PHONY: all deps test unit integration run install uninstall clean bench fuzz soak vmlinux
all: $(BUILD)/profd $(BUILD)/profctl

# Debian packages; idempotent and quick when everything is present.
deps:
	@./scripts/deps.sh

$(BUILD)/vmlinux.h:
	@mkdir -p $(@D)
	./scripts/gen-vmlinux.sh $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c bpf/*.h $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# Only the daemon includes the BPF skeletons.
$(DMN_OBJ): | $(SKELS)

$(BUILD)/libprofd.a: $(LIB_OBJ)
	$(AR) rcs $@ $^

$(BUILD)/profd: $(DMN_OBJ) $(BUILD)/libprofd.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PROFD_LIBS) $(LDLIBS)

# Only profctl speaks HTTP (export): profd stays without libcurl and without a network.
$(BUILD)/profctl: $(CLI_OBJ) $(BUILD)/libprofd.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PROFCTL_LIBS) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(BUILD)/libprofd.a
	$(CC) $(LDFLAGS) -o $@ $^ $(TEST_LIBS) $(LDLIBS)

# Test tools: programs the integration tests run beside profd (unwind_check).
$(BUILD)/tests/tools/%: $(BUILD)/tests/tools/%.o $(BUILD)/libprofd.a
	$(CC) $(LDFLAGS) -o $@ $^ $(TEST_LIBS) $(LDLIBS)

# Test programs keep frame pointers unless their name says otherwise (*_nofp).
# clang: gcc 12 ignores -mno-omit-leaf-frame-pointer, which loses the caller of
# every leaf function under frame-pointer unwinding.
TP_CC  ?= clang
TP_CXX ?= clang++
TP_FLAGS = -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline -pthread
$(BUILD)/testprogs/%_nofp: tests/testprogs/%_nofp.c
	@mkdir -p $(@D)
	$(TP_CC) -O1 -g -fomit-frame-pointer -fno-inline -pthread -o $@ $< -lm
# No libc: an image that never sets its thread pointer (profd's exec events wait for that).
$(BUILD)/testprogs/%_nolibc: tests/testprogs/%_nolibc.c
	@mkdir -p $(@D)
	$(TP_CC) -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-stack-protector -nostdlib -static -o $@ $<
$(BUILD)/testprogs/%: tests/testprogs/%.c
	@mkdir -p $(@D)
	$(TP_CC) $(TP_FLAGS) -o $@ $< -lm -ldl
$(BUILD)/testprogs/%: tests/testprogs/%.cc
	@mkdir -p $(@D)
	$(TP_CXX) $(TP_FLAGS) -o $@ $< -lm -ldl

test: deps-test
	@$(MAKE) --no-print-directory -j$(shell nproc) all tests-build
	@BUILD=$(BUILD) ./tests/run.sh all

.PHONY: deps-test tests-build
deps-test:
	@./scripts/deps.sh --test
tests-build: $(UNIT_BIN) $(TOOL_BIN) $(TP_BIN)

# ---- symbolizer tests: a library only dlopen()ed; a stripped binary and its build-id debug file ----
$(BUILD)/testprogs/libsym_plugin.so: tests/testprogs/lib/sym_plugin.c
	@mkdir -p $(@D)
	$(TP_CC) $(TP_FLAGS) -shared -fPIC -o $@ $<
$(BUILD)/testprogs/sym_stripped.debug: $(BUILD)/testprogs/sym_spin
	objcopy --only-keep-debug $< $@
$(BUILD)/testprogs/sym_stripped: $(BUILD)/testprogs/sym_spin $(BUILD)/testprogs/sym_stripped.debug
	objcopy --strip-all $< $@
tests-build: $(BUILD)/testprogs/libsym_plugin.so $(BUILD)/testprogs/sym_stripped
# ---- end symbolizer tests ----

unit: all tests-build
	@BUILD=$(BUILD) ./tests/run.sh unit

integration: all tests-build
	@BUILD=$(BUILD) ./tests/run.sh integration

run: deps
	@$(MAKE) --no-print-directory all
	./$(BUILD)/profd

bench: deps-test
	@$(MAKE) --no-print-directory all tests-build
	@BUILD=$(BUILD) ./tests/bench/run.sh

# 30 minutes of mixed load; SOAK_SECS=300 make soak for a shorter run.
soak: all tests-build
	@BUILD=$(BUILD) ./tests/bench/soak.sh

fuzz: all
	@BUILD=$(BUILD) ./tests/fuzz/run.sh long

install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/profd $(DESTDIR)$(PREFIX)/sbin/profd
	install -m 0755 $(BUILD)/profctl $(DESTDIR)$(PREFIX)/bin/profctl
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system $(DESTDIR)/etc/profd
	sed 's|@SBINDIR@|$(PREFIX)/sbin|g' systemd/profd.service > $(DESTDIR)$(PREFIX)/lib/systemd/system/profd.service
	install -d $(DESTDIR)$(PREFIX)/lib/sysusers.d
	install -m 0644 systemd/profd.sysusers $(DESTDIR)$(PREFIX)/lib/sysusers.d/profd.conf
	# The unit's user: created now on this machine, by systemd-sysusers at boot elsewhere.
	if [ -z "$(DESTDIR)" ] && ! getent passwd profd >/dev/null; then \
		systemd-sysusers $(PREFIX)/lib/sysusers.d/profd.conf 2>/dev/null || \
		useradd --system --user-group --home-dir /var/lib/profd --no-create-home --shell /usr/sbin/nologin profd; \
	fi
	[ -e $(DESTDIR)/etc/profd/profd.conf ] || install -m 0644 systemd/profd.conf $(DESTDIR)/etc/profd/profd.conf
	sed 's|@BINDIR@|$(PREFIX)/bin|g' systemd/profd-export.service > $(DESTDIR)$(PREFIX)/lib/systemd/system/profd-export.service
	[ -e $(DESTDIR)/etc/profd/export.conf ] || install -m 0644 systemd/export.conf $(DESTDIR)/etc/profd/export.conf
	install -m 0644 systemd/profd-export.sysusers $(DESTDIR)$(PREFIX)/lib/sysusers.d/profd-export.conf
	if [ -d docs/man ]; then install -d $(DESTDIR)$(PREFIX)/share/man/man8 && install -m 0644 docs/man/*.8 $(DESTDIR)$(PREFIX)/share/man/man8/; fi

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/profd $(DESTDIR)$(PREFIX)/bin/profctl
	rm -f $(DESTDIR)$(PREFIX)/lib/systemd/system/profd.service $(DESTDIR)$(PREFIX)/lib/sysusers.d/profd.conf
	rm -f $(DESTDIR)$(PREFIX)/lib/systemd/system/profd-export.service $(DESTDIR)$(PREFIX)/lib/sysusers.d/profd-export.conf
	rm -f $(DESTDIR)$(PREFIX)/share/man/man8/profd.8 $(DESTDIR)$(PREFIX)/share/man/man8/profctl.8

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
