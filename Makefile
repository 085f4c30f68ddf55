# MRC fabric on P4: set-up, build, run, test.
#
# Every target that needs Python uses .venv (made by `make deps` from Debian's
# /usr/bin/python3 with --system-site-packages, so Debian's Mininet is importable).
# Run as root on Debian 12: `make run`, `make test`. See README.md.

SHELL := /bin/bash
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= /usr/bin/python3
VENV := .venv
VENV_SHELL := .venv-shell
P4RUNTIME_SHELL_VERSION := 0.0.6
VENV_STAMP := $(VENV)/.stamp-project
SHELL_STAMP := $(VENV_SHELL)/.stamp-p4runtime-shell-$(P4RUNTIME_SHELL_VERSION)

# System packages from apt (installed only when missing).
APT_PACKAGES := mininet iproute2 iputils-ping tcpdump ethtool python3-venv procps psmisc nftables \
  gcc python3-dev libnghttp2-dev openssh-server sudo chromium chromium-driver

BUILD ?= build
RUN_DIR ?= /tmp/mrc-p4/run
GRPC_ADDR ?= 127.0.0.1:9559
DEVICE_ID ?= 0
ELECTION_ID ?= 1,0
PYTEST_ARGS ?=
RUN_ARGS ?=
MN_CLEAN ?= 1

P4SRC ?= p4src
P4_PROGRAMS := $(wildcard $(P4SRC)/*.p4)
P4INFOS := $(patsubst $(P4SRC)/%.p4,$(BUILD)/%.p4info.txtpb,$(P4_PROGRAMS))
# A program's output changes with its includes and with the compiler itself.
P4_DEPS := $(wildcard $(P4SRC)/include/*.p4) $(shell find p4target -name '*.py' -o -name '*.p4' 2>/dev/null)

.PHONY: help deps system-packages build native run lint test bench experiments workload soak shell clean distclean

help:
	@echo "make run        set up what is missing, build, start the Mininet fabric, install its tables, run the demo"
	@echo "make lint       ruff over the whole tree, mypy over the packages listed in pyproject.toml"
	@echo "make test       set up what is missing, make lint, run the whole test suite (tests/, per-test timeout)"
	@echo "make deps       apt packages, .venv (project, editable) and .venv-shell (p4runtime-shell)"
	@echo "make build      compile p4src/*.p4 with the embedded target into $(BUILD)/"
	@echo "make native     build the compiled fast paths of p4src/*.p4 into the cache (run, test, bench do)"
	@echo "make bench      run every benchmark under bench/ and print the figures"
	@echo "make experiments run the experiments on the Mininet fabric (root; TARGET=bmv2 on BMv2): results/*.json, *.png"
	@echo "make workload   a collective or traffic matrix as a job on the fabric (root; WORKLOAD_ARGS='...', docs/workloads.md)"
	@echo "make soak       the default fabric for SOAK_MINUTES (30) with transfers and a cable cut a minute (root; not in make test)"
	@echo "make shell      p4runtime-shell against a running switch (GRPC_ADDR=$(GRPC_ADDR) DEVICE_ID=$(DEVICE_ID);"
	@echo "                TLS_DIR=DIR for mutual TLS with the files of 'mrcctl certs DIR')"
	@echo "make clean      remove the project's stray namespaces/veths/switch processes, Mininet leftovers, build outputs"
	@echo "make distclean  clean, then remove .venv and .venv-shell"

# ---- set-up ---------------------------------------------------------------

deps: system-packages $(VENV_STAMP) $(SHELL_STAMP)

system-packages:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg -s "$$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "error: missing system packages:$$missing; run 'make deps' as root (or apt-get install them)" >&2; exit 1; \
	  fi; \
	  echo "deps: installing system packages:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null || { \
	    echo "error: apt-get could not install:$$missing" >&2; exit 1; }; \
	fi

$(VENV_STAMP): pyproject.toml | system-packages
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  echo "error: $(PYTHON) is missing or older than Python 3.11; install python3.11 and python3.11-venv, then run make PYTHON=/usr/bin/python3.11 ..." >&2; exit 1; }
	@if [ ! -x $(VENV)/bin/python ]; then \
	  echo "deps: creating $(VENV) ($(PYTHON) -m venv --system-site-packages)"; \
	  $(PYTHON) -m venv --system-site-packages $(VENV) || { echo "error: could not create $(VENV)" >&2; exit 1; }; \
	fi
	@echo "deps: installing the project into $(VENV) (pip install -e '.[test]')"
	@$(VENV)/bin/python -m pip install -q -e '.[test]' || { echo "error: pip could not install the project into $(VENV)" >&2; exit 1; }
	@touch $@

# p4runtime-shell pins protobuf < 3.21, ipython 7.31 and jedi 0.17.2: its own environment.
$(SHELL_STAMP): | system-packages
	@if [ ! -x $(VENV_SHELL)/bin/python ]; then \
	  echo "deps: creating $(VENV_SHELL) for p4runtime-shell"; \
	  $(PYTHON) -m venv $(VENV_SHELL) || { echo "error: could not create $(VENV_SHELL)" >&2; exit 1; }; \
	fi
	@echo "deps: installing p4runtime-shell==$(P4RUNTIME_SHELL_VERSION) into $(VENV_SHELL)"
	@$(VENV_SHELL)/bin/python -m pip install -q p4runtime-shell==$(P4RUNTIME_SHELL_VERSION) || { \
	  echo "error: pip could not install p4runtime-shell into $(VENV_SHELL)" >&2; exit 1; }
	@touch $@

# ---- build ----------------------------------------------------------------

build: deps
	@if [ -z "$(P4_PROGRAMS)" ]; then \
	  echo "build: no P4 programs in $(P4SRC)/ yet, nothing to compile"; \
	elif [ ! -x $(VENV)/bin/p4target ] || ! $(VENV)/bin/python -c 'import p4target.cli' 2>/dev/null; then \
	  echo "error: $(VENV)/bin/p4target is missing or broken; run 'make distclean deps' to reinstall the project" >&2; exit 1; \
	else \
	  $(MAKE) -s --no-print-directory $(P4INFOS); \
	fi

$(BUILD)/%.p4info.txtpb: $(P4SRC)/%.p4 $(P4_DEPS)
	@mkdir -p $(@D)
	@echo "build: $< -> $@"
	@$(VENV)/bin/p4target compile $< --p4info $@

# The optional speed machinery of p4target/accel/, built once into the cache (~50 s
# the first time, then nothing): the compiled fast paths of p4src/*.p4 (Cython + gcc,
# p4target/accel/native.py), the compiled P4Runtime write path
# (p4target/accel/write_path.py) and the P4Runtime server's HTTP/2 loop
# (p4target/accel/h2_server.py, on nghttp2), so that switches take them from their
# first frame. A machine with no C compiler or no Python.h (or with P4TARGET_NATIVE=0,
# or a tree without p4target/accel/) skips them with one line saying why: switches
# forward on the interpreted fast path and the server writes with write.py on grpc.server.
# With a compiler, a build that fails is an error: every step runs, then make stops;
# a .venv that cannot load p4target is an error at once.
native: deps
	@if [ "$${P4TARGET_NATIVE:-1}" = 0 ]; then \
	  echo "native: skipped (P4TARGET_NATIVE=0): switches use the interpreted fast path"; exit 0; \
	fi; \
	if [ ! -d p4target/accel ]; then \
	  echo "native: skipped (no p4target/accel/): switches use the interpreted fast path"; exit 0; \
	fi; \
	why=$$($(VENV)/bin/python -c 'from p4target.accel.native import NativeError, c_compiler'$$'\n''try: c_compiler()'$$'\n''except NativeError as e: print(e); raise SystemExit(3)'); \
	case $$? in \
	  0) ;; \
	  3) echo "native: skipped, $$why: switches use the interpreted fast path"; exit 0 ;; \
	  *) echo "error: native: $(VENV) cannot load p4target; run 'make distclean deps' to reinstall the project" >&2; exit 1 ;; \
	esac; \
	failed=""; \
	for p in $(P4_PROGRAMS); do \
	  $(VENV)/bin/p4target compile --native $$p || failed="$$failed $$p"; \
	done; \
	$(VENV)/bin/python -m p4target.accel.write_path || failed="$$failed p4target.accel.write_path"; \
	$(VENV)/bin/python -m p4target.accel.h2_server || failed="$$failed p4target.accel.h2_server"; \
	if [ -n "$$failed" ]; then \
	  echo "error: native: these did not build:$$failed (messages above); fix the cause, or set P4TARGET_NATIVE=0 to run without them" >&2; \
	  exit 1; \
	fi

# ---- run, test, bench, shell ----------------------------------------------

# The fabric in Mininet (topologies/run.py): TOPO=topologies/<file>.yaml or RUN_ARGS='--planes 2 ...'.
TOPO ?=
run: deps
	@$(MAKE) --no-print-directory build native
	@MRC_P4_RUN_DIR=$(RUN_DIR) $(VENV)/bin/python -m topologies.run $(if $(TOPO),--topology $(TOPO)) $(RUN_ARGS)

# The checks (configured in pyproject.toml): ruff (with its complexity rule) over every
# Python file, mypy over the packages in [tool.mypy] packages. `make test` runs them first.
lint: deps
	@echo "lint: ruff check ."
	@$(VENV)/bin/python -m ruff check --quiet . || { echo "error: ruff found the problems above; fix them (or see [tool.ruff] in pyproject.toml)" >&2; exit 1; }
	@echo "lint: mypy ($$($(VENV)/bin/python -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["tool"]["mypy"]["packages"]))'))"
	@$(VENV)/bin/python -m mypy || { echo "error: mypy found the problems above; fix them (or see [tool.mypy] in pyproject.toml)" >&2; exit 1; }

test: deps lint native
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

# BENCH='fabric_net scale_fabric': only those scripts (names of bench/*.py), in one run.
BENCH ?=
bench: deps native
	@$(VENV)/bin/python bench/run.py $(foreach b,$(BENCH),--only $(b))

EXPERIMENTS := spraying failure trimming loss_reordering tcp adaptive incast ecmp fleet workload_cut workload_alltoall workload_matrix
# TARGET=bmv2 (or auto): the experiments' switches on BMv2 (docs/experiments.md).
TARGET ?= $(or $(MRC_P4_TARGET),embedded)

# The soak (tools/soak.py; root, not part of `make test`): its figures in docs/performance.md.
SOAK_MINUTES ?= 30
soak: deps native
	@$(VENV)/bin/python tools/soak.py --minutes $(SOAK_MINUTES)

experiments: deps
	@status=0; for e in $(EXPERIMENTS); do \
	  echo "== experiments.$$e (target $(TARGET))"; $(VENV)/bin/python -m experiments.$$e --target $(TARGET) || status=1; \
	done; exit $$status

# A job on the Mininet fabric (mrc-workload, docs/workloads.md); the default: the 16-host ring all-reduce.
WORKLOAD_ARGS ?= --collective allreduce --planes 2 --spines 2 --leaves 4 --hosts-per-leaf 4
workload: deps
	@$(MAKE) --no-print-directory build native
	@$(VENV)/bin/mrc-workload $(WORKLOAD_ARGS)

shell: deps
	@$(VENV_SHELL)/bin/python -m p4runtime_sh --grpc-addr $(GRPC_ADDR) --device-id $(DEVICE_ID) --election-id $(ELECTION_ID) \
	  $(if $(TLS_DIR),--ssl --cacert $(TLS_DIR)/ca.pem --cert $(TLS_DIR)/client.pem --private-key $(TLS_DIR)/client.key) || { \
	  echo "shell: no session with a switch at $(GRPC_ADDR) (device $(DEVICE_ID)); start one first, e.g." \
	       "'.venv/bin/p4target run PROGRAM.p4 -i 1@IFACE --grpc-addr $(GRPC_ADDR)', or set GRPC_ADDR/DEVICE_ID" >&2; exit 1; }

# ---- clean ----------------------------------------------------------------

clean:
	@if [ "$$(id -u)" = 0 ]; then \
	  MRC_P4_RUN_DIR=$(RUN_DIR) $(PYTHON) tools/cleanup.py; \
	  if [ "$(MN_CLEAN)" != 0 ] && command -v mn >/dev/null; then \
	    echo "clean: mn -c (Mininet's own cleanup)"; mn -c >/dev/null 2>&1 || true; \
	  fi; \
	else \
	  MRC_P4_RUN_DIR=$(RUN_DIR) $(PYTHON) tools/cleanup.py --check >/dev/null || { \
	    echo "error: namespaces/veths/processes of the project are left; run 'make clean' as root" >&2; exit 1; }; \
	fi
	@rm -rf $(BUILD) .pytest_cache
	@find . -path ./$(VENV) -prune -o -path ./$(VENV_SHELL) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} + 
	@echo "clean: done"

distclean: clean
	rm -rf $(VENV) $(VENV_SHELL) *.egg-info
