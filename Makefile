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
.PHONY: all list configs run report test clean help

# The builds, baseline first.  pg is the plain build with -pg, for uftrace.
BUILDS := plain sdt sdt-guarded sdt-nop5 ust pg

# has_header(H): y when the compiler finds <H>.  (printf's \043 is '#',
# which Make would otherwise take for a comment.)
has_header = $(shell printf '\043include <%s>\n' $(1) | $(CC) -E -x c - >/dev/null 2>&1 && echo y)
HAVE_SDT := $(if $(shell command -v $(DTRACE)),$(call has_header,sys/sdt.h))
HAVE_UST := $(call has_header,lttng/tracepoint.h)

WANT := plain pg
ifeq ($(HAVE_SDT),y)
WANT += sdt sdt-guarded sdt-nop5
else
$(info make: skipping the sdt, sdt-guarded and sdt-nop5 builds: no dtrace or <sys/sdt.h> (Debian package systemtap-sdt-dev))
endif
ifeq ($(HAVE_UST),y)
WANT += ust
else
$(info make: skipping the ust build: no <lttng/tracepoint.h> (Debian package liblttng-ust-dev))
endif

all: $(addprefix build/benchmark-,$(filter $(WANT),$(BUILDS))) build/memlock-shim.so

list:
	@echo "plain        nothing in single_trace (the baseline)"
	@echo "sdt          SDT marker from probes.d, 1-byte nop site, semaphore not checked"
	@echo "sdt-guarded  the same marker under its _ENABLED() semaphore"
	@echo "sdt-nop5     the same marker at a 5-byte nop site (0f 1f 44 00 00)"
	@echo "ust          an LTTng-UST tracepoint with the same argument"
	@echo "pg           the plain build compiled with -pg (for uftrace)"

configs:
	$(Q)$(PYTHON) scripts/run.py --list

build build/nop5/sys:
	$(Q)mkdir -p $@

# compile(TRACE_HEADER, EXTRA_FLAGS): the one recipe every build shares;
# TRACE_BUILD is the build's name, which the target puts in its record.
define compile
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(2) -include src/trace/$(1).h \
		-DTRACE_BUILD='"$(@:build/benchmark-%=%)"' \
		src/benchmark.c $(filter %.o,$^) -o $@ $(LDLIBS)
endef

build/probes.h: probes.d | build
	@$(if $(Q),echo "  DTRACE  $@")
	$(Q)$(DTRACE) -h -s $< -o $@

build/probes.o: probes.d | build
	@$(if $(Q),echo "  DTRACE  $@")
	$(Q)$(DTRACE) -G -s $< -o $@

# sys/sdt.h with the probe site's `nop` made the 5-byte nop, spelt as
# bytes because gas would shorten `nopl 0x0(%rax,%rax,1)` to 4 bytes; the
# sed must change exactly one line, or the build stops.
SDT_H = $(shell printf '\043include <sys/sdt.h>\n' | $(CC) -M -x c - 2>/dev/null | tr ' \\' '\n\n' | grep '/sys/sdt\.h$$')
build/nop5/sys/sdt.h: | build/nop5/sys
	@$(if $(Q),echo "  GEN     $@")
	$(Q)src=$(SDT_H); test -n "$$src" || { echo "make: no sys/sdt.h (Debian package systemtap-sdt-dev)" >&2; exit 1; }; \
	cp "$$(dirname "$$src")/sdt-config.h" build/nop5/sys/ && \
	sed 's/^#define _SDT_NOP\tnop$$/#define _SDT_NOP\t.byte 0x0f; .byte 0x1f; .byte 0x44; .byte 0x00; .byte 0x00/' "$$src" > $@ && \
	test "$$(diff "$$src" $@ | grep -c '^>')" = 1 || { echo "make: could not make the 5-byte nop variant of $$src" >&2; exit 1; }

build/ust_provider.o: src/ust_provider.c src/ust_tp.h | build
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -c $< -o $@

# Preloaded into stapbpf on kernels that do not charge BPF to memlock.
build/memlock-shim.so: src/memlock_shim.c | build
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) $(WARN) -shared -fPIC $< -o $@ -ldl

build/benchmark-plain: src/benchmark.c src/trace/plain.h | build
	$(call compile,plain)

build/benchmark-pg: src/benchmark.c src/trace/plain.h | build
	$(call compile,plain,-pg)

build/benchmark-sdt: src/benchmark.c src/trace/sdt.h build/probes.h build/probes.o | build
	$(call compile,sdt)

build/benchmark-sdt-guarded: src/benchmark.c src/trace/sdt-guarded.h build/probes.h build/probes.o | build
	$(call compile,sdt-guarded)

build/benchmark-sdt-nop5: src/benchmark.c src/trace/sdt-nop5.h build/probes.h build/probes.o build/nop5/sys/sdt.h | build
	$(call compile,sdt-nop5,-Ibuild/nop5)

build/benchmark-ust: LDLIBS += -llttng-ust -ldl
build/benchmark-ust: src/benchmark.c src/trace/ust.h src/ust_tp.h build/ust_provider.o | build
	$(call compile,ust)

# The runner takes each Make variable as the flag of the same meaning; they
# reach it through the environment (Make exports command-line variables),
# so no value is ever spliced into a shell command line.
RUN_VARS := THREADS ITER RUNS CONFIGS QUICK NO_INSTALL STAP_RUNTIME MAX_RUN_S MIN_RUN_S PIN SEED TIME_LIMIT
RUN_FLAGS = $${THREADS:+--threads "$$THREADS"} $${ITER:+--iter "$$ITER"} \
	$${RUNS:+--runs "$$RUNS"} $${CONFIGS:+--configs "$$CONFIGS"} \
	$${QUICK:+--quick "$$QUICK"} $${NO_INSTALL:+--no-install "$$NO_INSTALL"} \
	$${STAP_RUNTIME:+--stap-runtime "$$STAP_RUNTIME"} $${MAX_RUN_S:+--max-run-s "$$MAX_RUN_S"} \
	$${MIN_RUN_S:+--min-run-s "$$MIN_RUN_S"} $${PIN:+--pin "$$PIN"} $${SEED:+--seed "$$SEED"} \
	$${TIME_LIMIT:+--time-limit "$$TIME_LIMIT"}
# Make expands a value such as THREADS='$$(x)' to nothing before the runner
# sees it: refuse a variable that was given but expands to nothing.
check_given = $(if $(filter command line,$(origin $(1))),$(if $(strip $($(1))),,\
	$(error $(1) '$(value $(1))' is not allowed: it expands to nothing in make)))

run:
	$(foreach v,$(RUN_VARS),$(call check_given,$(v)))
	$(Q)$(PYTHON) scripts/run.py $(RUN_FLAGS)

report:
	$(Q)$(PYTHON) scripts/report.py $${RESULTS:+$$RESULTS}

test: all
	$(Q)$(PYTHON) tests/run_tests.py $${TESTS:+$$TESTS}

clean:
	rm -rf build

help:
	@echo "make [all]        build every build whose dependencies are here (make list)"
	@echo "make list         the builds;  make configs: the configurations"
	@echo "make run          the matrix: THREADS=1..8 ITER=10000000 RUNS=3 CONFIGS='bpftrace-*' QUICK=1 MAX_RUN_S=2 MIN_RUN_S=1 PIN=1 SEED=N TIME_LIMIT=600 NO_INSTALL=1 STAP_RUNTIME=module|bpf"
	@echo "make report       the report of results/latest (RESULTS='results/A results/B' for several)"
	@echo "make test         the test suite (TESTS=name to pick some)"
	@echo "make clean        remove build/"
