# Makefile: builds the target (one source, several builds in build/), runs
# the matrix, the report and the tests.  `make help` lists the targets.
# Needs: gcc/make; systemtap-sdt-dev for the SDT builds; liblttng-ust-dev
# for the ust build.  A build whose dependency is missing is skipped with
# one line naming the Debian package.

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror
CPPFLAGS += -D_GNU_SOURCE -Isrc -Ibuild
LDLIBS  += -pthread
DTRACE  ?= dtrace
# The report finds an interpreter with matplotlib for its plots itself,
# after `make run` has installed it, so any python3 will do here.
PYTHON  ?= python3

ifeq ($(V),1)
Q :=
else
Q := @
endif

.DELETE_ON_ERROR:
.PHONY: all list needs packages packages-here configs run report check test test-host test-guests test-userland clean help lab lab-shell atlas fleet lava lifecycle floor versus

# The builds: src/builds.tsv, one row each (its header says the columns).
# field(BUILD,N): column N of BUILD's row.
BUILD_TABLE := src/builds.tsv
comma := ,
rows = awk -F'\t' 'NF == 7 && $$1 != "build" $(1)' $(BUILD_TABLE)
BUILDS := $(shell $(call rows,{ print $$1 }))
# Columns 2-5 read once: an awk a call would be a hundred forks each time
# make starts, most of `make all`'s time when nothing needs building (and
# two seconds of each guest's start under TCG).  Columns 2-4 have no
# spaces; column 5's (cflags) travel as ^, which no flag of it may hold
# (nor a comma, # or $: src/builds.tsv).
$(foreach r,$(shell $(call rows,{ gsub(/ /, "^", $$5); \
	print $$1 "$(comma)" $$2 "$(comma)" $$3 "$(comma)" $$4 "$(comma)" $$5 })),\
	$(eval COLS.$(firstword $(subst $(comma), ,$(r))) := $(subst $(comma), ,$(r))))
field = $(if $(filter 2 3 4,$(2)),$(word $(2),$(COLS.$(1))),\
	$(if $(filter 5,$(2)),$(subst ^, ,$(word 5,$(COLS.$(1)))),\
	$(shell $(call rows,&& $$1 == "$(1)" { print $$$(2) }))))

# What each kind of build needs, and the Debian package that has it.
# has_header(H): y when the compiler finds <H>.  (printf's \043 is '#',
# which Make would otherwise take for a comment.)
has_header = $(shell printf '\043include <%s>\n' $(1) | $(CC) -E -x c - >/dev/null 2>&1 && echo y)
HAVE.plain := y
HAVE.sdt := $(if $(shell command -v $(DTRACE)),$(call has_header,sys/sdt.h))
HAVE.ust := $(call has_header,lttng/tracepoint.h)
HAVE.lib := $(HAVE.sdt)
PACKAGE.sdt := systemtap-sdt-dev
PACKAGE.ust := liblttng-ust-dev
PACKAGE.lib := $(PACKAGE.sdt)
WHAT.sdt := dtrace or <sys/sdt.h>
WHAT.ust := <lttng/tracepoint.h>
WHAT.lib := $(WHAT.sdt)
DEPS.sdt := build/probes.h build/probes.o
DEPS.ust := build/ust_provider.o src/ust_tp.h
DEPS.lib := build/libkit-bystander.so src/kitlib.h
LIBS.ust := -llttng-ust -ldl
# $ORIGIN (its $ doubled twice: eval expands the build rule once, and the recipe
# once more): the target finds
# the library beside itself, wherever build/ is
LIBS.lib := -Lbuild -lkit-bystander -Wl,-rpath,'$$$$ORIGIN'

KIND = $(call field,$(1),3)
WANT := $(foreach b,$(BUILDS),$(if $(HAVE.$(call KIND,$(b))),$(b)))
MISSING_KINDS := $(sort $(foreach b,$(filter-out $(WANT),$(BUILDS)),$(call KIND,$(b))))
QUIET_GOALS := needs packages packages-here list configs help clean test test-host test-guests test-userland
ifeq ($(filter $(QUIET_GOALS),$(MAKECMDGOALS)),)
$(foreach k,$(MISSING_KINDS),$(info make: skipping the $(strip $(foreach b,$(BUILDS),\
	$(if $(filter $(k),$(call KIND,$(b))),$(b)))) build(s): no $(WHAT.$(k)) (Debian package $(PACKAGE.$(k)))))
endif

# The C++ example (build/throw) where a C++ compiler is here.
HAVE.cxx := $(shell command -v $(CXX))
ifeq ($(filter $(QUIET_GOALS),$(MAKECMDGOALS))$(HAVE.cxx),)
$(info make: skipping build/throw (the C++ example): no $(CXX) (Debian package g++))
endif

# The libbpf back-end's loader (src/libbpf/, scripts/tracers/libbpf.py):
# clang's BPF target, bpftool's skeleton and libbpf, on a kernel with BTF
# (vmlinux.h is dumped from it).
CLANG   ?= clang
BPFTOOL ?= $(or $(shell command -v bpftool),$(wildcard /usr/sbin/bpftool),bpftool)
PACKAGE.libbpf := clang bpftool libbpf-dev
RUNTIME.libbpf := libbpf1  # what the loader needs where it runs (make lab's guests): its library
BTF := /sys/kernel/btf/vmlinux
# (none without the kernel's BTF: the packages would not make it buildable)
NEEDS.libbpf := $(if $(wildcard $(BTF)),$(if $(shell command -v $(CLANG)),,clang) \
	$(if $(shell command -v $(BPFTOOL)),,bpftool) $(if $(call has_header,bpf/usdt.bpf.h),,libbpf-dev))
HAVE.libbpf := $(if $(strip $(NEEDS.libbpf)),,$(wildcard $(BTF)))
BPF_ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(shell uname -m)))
ifeq ($(filter $(QUIET_GOALS),$(MAKECMDGOALS))$(HAVE.libbpf),)
LIBBPF_WHY = $(if $(strip $(NEEDS.libbpf)),no clang$(comma) bpftool or <bpf/usdt.bpf.h> \
	(Debian packages $(strip $(NEEDS.libbpf))),no $(BTF) (a kernel without BTF))
$(info make: skipping build/kit-libbpf (the libbpf rows): $(strip $(LIBBPF_WHY)))
endif

all: $(addprefix build/benchmark-,$(WANT)) build/memlock-shim.so build/raw-loop \
	build/libkit-semaphore-audit.so \
	$(if $(HAVE.cxx),build/throw) $(if $(HAVE.libbpf),build/kit-libbpf)

list:
	@$(call rows,{ printf "%-21s %s\n"$(comma) $$1$(comma) $$7 })

# The Debian packages the builds that cannot be made here need (run.py installs them).
needs:
	@$(foreach k,$(MISSING_KINDS),echo $(PACKAGE.$(k));)$(foreach p,$(NEEDS.libbpf),echo $(p);)

# Every build kind's package, needed or not (the lab's guests run the builds
# made here: of libbpf's, its library, not its compiler).
KIND_PACKAGES = $(foreach k,$(sort $(foreach b,$(BUILDS),$(call KIND,$(b)))),$(PACKAGE.$(k)))
packages:
	@$(foreach p,$(sort $(KIND_PACKAGES) $(RUNTIME.libbpf)),echo $(p);)

# Every package the builds here use, needed or not (the suite's list, tests/packages.py).
packages-here:
	@$(foreach p,$(sort $(KIND_PACKAGES) $(PACKAGE.libbpf)),echo $(p);)

configs:
	$(Q)$(PYTHON) scripts/run.py --list

build:
	$(Q)mkdir -p $@

build/probes.h: probes.d | build
	@$(if $(Q),echo "  DTRACE  $@")
	$(Q)$(DTRACE) -h -s $< -o $@

build/probes.o: probes.d | build
	@$(if $(Q),echo "  DTRACE  $@")
	$(Q)$(DTRACE) -G -s $< -o $@

# build/site-BUILD/sys/sdt.h: sys/sdt.h with the probe site's `nop` made
# the build's site bytes, spelt as .byte because gas would shorten a long
# nop; bytes before a | go before the probe's label (its address); a
# leading ^ jumps over padding that puts the 5th byte of the probe's
# bytes at a 4 KiB page's start (.p2align and .skip, commas being out of
# reach inside sdt.h's macros).  Each sed must change exactly one line,
# or the build stops.
SDT_H = $(shell printf '\043include <sys/sdt.h>\n' | $(CC) -M -x c - 2>/dev/null | tr ' \\' '\n\n' | grep '/sys/sdt\.h$$')
byte_list = sed 's/../.byte 0x&; /g; s/; $$//'
build/site-%/sys/sdt.h: $(BUILD_TABLE)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)mkdir -p $(@D) && src=$(SDT_H); test -n "$$src" || { echo "make: no sys/sdt.h (Debian package systemtap-sdt-dev)" >&2; exit 1; }; \
	spec='$(call field,$*,4)'; page=; case "$$spec" in ^*) page=1; spec=$${spec#^};; esac; \
	case "$$spec" in *'|'*) pre=$${spec%%|*};; *) pre=;; esac; \
	post=$$(echo "$${spec#*|}" | $(byte_list)); \
	prebytes=$${pre:+$$(echo $$pre | $(byte_list))}; \
	if [ -n "$$page" ]; then prebytes="jmp 996f; .p2align 12; .skip $$((4092 - $${#pre} / 2)); 996: $$prebytes"; fi; \
	cp "$$(dirname "$$src")/sdt-config.h" $(@D)/ && \
	sed -e "s/^#define _SDT_NOP\tnop$$/#define _SDT_NOP\t$$post/" \
	    $${prebytes:+-e "s/_SDT_ASM_1(990:\t_SDT_NOP)/_SDT_ASM_1($$prebytes; 990:\t_SDT_NOP)/"} \
	    "$$src" > $@ && \
	test "$$(diff "$$src" $@ | grep -c '^>')" = "$$(( $${prebytes:+1} + 1 ))" || { echo "make: could not make the site $$spec in $$src" >&2; exit 1; }

build/ust_provider.o: src/ust_provider.c src/ust_tp.h | build
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -c $< -o $@

# The bystanders' shared library (make lifecycle): one marker, one entry point.
build/libkit-bystander.so: src/kitlib.c src/kitlib.h | build
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -shared -fPIC $< -o $@

# Preloaded into stapbpf on kernels that do not charge BPF to memlock.
build/memlock-shim.so: src/memlock_shim.c | build
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) $(WARN) -shared -fPIC $< -o $@ -ldl

# Loaded by glibc's loader into a user's command (LD_AUDIT) to raise its
# marker's semaphore for SystemTap's BPF runtime (scripts/workloads.py).
build/libkit-semaphore-audit.so: src/semaphore_audit.c | build
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) $(WARN) -shared -fPIC $< -o $@

# A program of someone else's library to trace (docs/real-programs.md):
# throws and catches N exceptions, each passing libstdc++'s libstdcxx:throw.
build/throw: src/examples/throw.cc | build
	@$(if $(Q),echo "  CXX     $@")
	$(Q)$(CXX) $(CFLAGS) $(WARN) $< -o $@

# The libbpf loader: the kernel's types, the BPF object, its skeleton, the loader.
build/libbpf/vmlinux.h: | build
	@$(if $(Q),echo "  BTF     $@")
	$(Q)mkdir -p $(@D) && $(BPFTOOL) btf dump file $(BTF) format c > $@

build/libbpf/kit.bpf.o: src/libbpf/kit.bpf.c src/libbpf/sites.h build/libbpf/vmlinux.h
	@$(if $(Q),echo "  BPF     $@")
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) $(WARN) -Wno-unused-parameter -isystem build/libbpf \
		-I/usr/include/$(shell $(CC) -print-multiarch) -c $< -o $@

build/libbpf/kit.skel.h: build/libbpf/kit.bpf.o
	@$(if $(Q),echo "  GEN     $@")
	$(Q)$(BPFTOOL) gen skeleton $< name kit_bpf > $@

build/kit-libbpf: src/libbpf/loader.c src/libbpf/sites.h build/libbpf/kit.skel.h
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) $(WARN) -Ibuild/libbpf $< -o $@ -lbpf

# The floor the baseline is held to (bench/floor.py): a raw loop.
build/raw-loop: bench/raw_loop.c | build
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) $(WARN) $< -o $@ -pthread

# One rule for every build, from its row: the trace header, the kind's
# objects and libraries, the generated site header, the extra flags.
# TRACE_BUILD is the build's name, which the target puts in its record.
SITE = $(if $(filter-out -,$(call field,$(1),4)),build/site-$(1)/sys/sdt.h)
HEADERS = $(foreach h,$(subst +, ,$(call field,$(1),2)),src/trace/$(h).h)
define build_rule
build/benchmark-$(1): src/benchmark.c src/plugin/window.h $(call HEADERS,$(1)) $(DEPS.$(call KIND,$(1))) $(call SITE,$(1)) $(BUILD_TABLE) | build
	@$$(if $$(Q),echo "  CC      $$@")
	$$(Q)$$(CC) $$(CPPFLAGS) $(if $(call SITE,$(1)),-Ibuild/site-$(1)) $$(CFLAGS) $$(WARN) \
		$(filter-out -,$(call field,$(1),5)) $(addprefix -include ,$(call HEADERS,$(1))) \
		-DTRACE_BUILD='"$(1)"' src/benchmark.c $$(filter %.o,$$^) -o $$@ $$(LDLIBS) $(LIBS.$(call KIND,$(1)))
endef
$(foreach b,$(BUILDS),$(eval $(call build_rule,$(b))))

# The runner takes each Make variable as the flag of the same meaning
# (scripts/params.py, their one home); they reach it through the
# environment only (Make exports command-line variables), so no value is
# ever spliced into a shell command line.
RUN_VARS = $(shell $(PYTHON) scripts/run.py --vars | cut -d= -f1)
# Make expands a value such as THREADS='$$(x)' to nothing before the runner
# sees it: refuse a variable that was given but expands to nothing.
check_given = $(if $(filter command line,$(origin $(1))),$(if $(strip $($(1))),,\
	$(error $(1) '$(value $(1))' is not allowed: it expands to nothing in make)))

run:
	$(foreach v,$(RUN_VARS),$(call check_given,$(v)))
	$(Q)$(PYTHON) scripts/run.py

report:
	$(Q)$(PYTHON) scripts/report.py $${RESULTS:+$$RESULTS}

# Every configuration in guest kernels, SystemTap's module runtime for real (scripts/lab), its
# variables (`scripts/lab --vars`) read from the environment as make run's are.
LAB_VARS = $(shell $(PYTHON) scripts/lab --vars | cut -d= -f1)

lab:
	$(foreach v,$(LAB_VARS),$(call check_given,$(v)))
	$(Q)$(PYTHON) scripts/lab

lab-shell:
	$(foreach v,$(LAB_VARS),$(call check_given,$(v)))
	$(Q)$(PYTHON) scripts/lab --shell

# Every configuration on every kernel the mirror offers, one suite's tools held
# still, with the host's ns beside them (scripts/atlas), into docs/atlas/.
ATLAS_VARS = $(shell $(PYTHON) scripts/atlas --vars | cut -d= -f1)

atlas:
	$(foreach v,$(ATLAS_VARS),$(call check_given,$(v)))
	$(Q)$(PYTHON) scripts/atlas

# The kit on every host of an Ansible inventory (scripts/fleet): the
# runner's variables are checked here and handed to each host's make run.
FLEET_VARS = $(shell $(PYTHON) scripts/fleet --vars | cut -d= -f1)

fleet:
	$(foreach v,$(FLEET_VARS) $(RUN_VARS),$(call check_given,$(v)))
	$(Q)$(PYTHON) scripts/fleet

# The kit in LAVA (scripts/lava): a QUICK job run for real by lava-run on make
# lab's sid guest; `python3 scripts/lava --help` for its other commands.
lava:
	$(Q)$(PYTHON) scripts/lava run

# Attach, detach and the bystanders' tax (scripts/lifecycle), its variables
# (`scripts/lifecycle --vars`) read from the environment as make run's are.
LIFECYCLE_VARS = $(shell $(PYTHON) scripts/lifecycle --vars | cut -d= -f1)

lifecycle:
	$(foreach v,$(LIFECYCLE_VARS),$(call check_given,$(v)))
	$(Q)$(PYTHON) scripts/lifecycle

# The baseline's loop against a raw loop, alternated (a benchmark).
floor: build/benchmark-plain build/raw-loop
	$(Q)$(PYTHON) bench/floor.py

# The kit against hyperfine on the idle marker's cost, in one sitting.
versus: build/benchmark-plain build/benchmark-sdt
	$(Q)$(PYTHON) bench/versus.py

# The suite, tier by tier (tests/run_tests.py; README says what each holds).
# `make check` needs no root and installs nothing; the others first install
# what their tests need (tests/packages.py, naming the packages; NO_INSTALL=1
# forbids), then build, so the build sees what was installed.
TEST_TIERS.test-host := host
TEST_TIERS.test-guests := guests
TEST_TIERS.test-userland := userland

check: all
	$(Q)$(PYTHON) tests/run_tests.py --tier check $${TESTS:+$$TESTS}

test test-host test-guests test-userland:
	$(call check_given,NO_INSTALL)
	$(Q)$(PYTHON) tests/packages.py
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(PYTHON) tests/run_tests.py $(if $(TEST_TIERS.$@),--tier $(TEST_TIERS.$@)) $${TESTS:+$$TESTS}

clean:
	rm -rf build

help:
	@echo "make [all]        build every build whose dependencies are here (make list)"
	@echo "make list         the builds;  make configs: the configurations"
	@echo "make run          the matrix; its variables and their defaults (scripts/run.py --help says more):"
	@$(PYTHON) scripts/run.py --vars | sed 's/^/                    /'
	@echo "make report       the report of results/latest (RESULTS='results/A results/B' for several)"
	@echo "make lab          every configuration in guest kernels, SystemTap's module runtime for real, in instructions; its variables (scripts/lab --help says more):"
	@$(PYTHON) scripts/lab --vars | sed 's/^/                    /'
	@echo "make atlas        every configuration on every kernel of the mirror, in instructions, the host's ns beside them (docs/atlas/); its variables:"
	@$(PYTHON) scripts/atlas --vars | sed 's/^/                    /'
	@echo "make lab-shell    a shell in the (first) guest, the kit at /kit"
	@echo "make fleet        make run on every host of an Ansible inventory, folders fetched back; its variables (and make run's):"
	@$(PYTHON) scripts/fleet --vars | sed 's/^/                    /'
	@echo "make lava         a QUICK job run for real by LAVA's lava-run on make lab's sid guest (scripts/lava --help: its cases, job, validate)"
	@echo "make lifecycle    attach and detach time against probes and processes, and what an untraced process pays; its variables:"
	@$(PYTHON) scripts/lifecycle --vars | sed 's/^/                    /'
	@echo "make test         the test suite, every tier, installing what it needs first (TESTS=name to pick some; NO_INSTALL=1)"
	@echo "make check        its tier that needs no root, tracer or guest (minutes, as any user)"
	@echo "make test-host    its tier of root, real tracers and programs;  make test-guests: what boots QEMU"
	@echo "make test-userland  the kit in a Debian 13 (trixie) root on this kernel (not in make test)"
	@echo "make floor        the baseline's loop against a raw loop (bench/floor.py)"
	@echo "make versus       the kit against hyperfine on the idle marker (bench/versus.py)"
	@echo "make clean        remove build/"
