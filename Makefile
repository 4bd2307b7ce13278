# Handoff build entry points. The JDK (>= 25) is found by the launcher's own search, so the Makefile
# works on a machine whose default java is older.
JAVA_HOME := $(shell sh dist/src/bin/handoff --print-java-home 2>/dev/null)
ifeq ($(JAVA_HOME),)
$(error no JDK 25 or newer found (looked at JAVA_HOME, PATH, /usr/lib/jvm, /usr/java, /opt); install one and set JAVA_HOME)
endif
export JAVA_HOME
export UCX_ERROR_SIGNALS :=

MVN ?= mvn
MVN_FLAGS ?= -B -ntp -e
HANDOFF := dist/target/handoff/bin/handoff

.PHONY: all dist docs test fuzz demo bench-llamacpp jmh jmh-jar jmh-smoke clean

all: dist

## dist: build the distribution (dist/target/handoff-<version>-bin.tar.gz, unpacked at dist/target/handoff/)
dist:
	$(MVN) $(MVN_FLAGS) -DskipTests package

## docs: regenerate docs/configuration.md from the reference.conf files (a test fails when it is stale)
docs: dist
	$(HANDOFF) config --reference > docs/configuration.md

## test: build everything and run every test, including the end-to-end tests of the built tarball
test:
	$(MVN) $(MVN_FLAGS) verify

## fuzz: explore from each fuzz test's seed corpus (make test replays only the corpus). Jazzer fuzzes one test per JVM,
## so each target is its own run, bounded by the maxExecutions of its @FuzzTest; new inputs it finds go to .cifuzz-corpus/
FUZZ_TARGETS := \
	engine-core:ControlCodecFuzzTest\#frameDecodesOrIsMalformed \
	engine-core:ControlCodecFuzzTest\#frameReaderReturnsItsBudget \
	engine-core:ClusterHandshakeFuzzTest\#responderCompletesOrRefuses \
	engine-core:ClusterHandshakeFuzzTest\#initiatorCompletesOrRefuses \
	engine-core:ClusterHandshakeFuzzTest\#peerTextCannotBreakALine \
	engine-core:PoolDescriptionsFuzzTest\#descriptionReadsOrIsRefused \
	engine-core:HandoffConfigFuzzTest\#configLoadsOrIsInvalid \
	engine-http:RequestBodyFuzzTest\#chatBodyParsesOrIsABadRequest \
	engine-http:RequestBodyFuzzTest\#generateAndCompletionFieldsReadOrAreABadRequest
## FUZZ_SEED fixes libFuzzer's seed, so a run repeats the same inputs (CI finds what a run here found); another seed
## explores anew: make fuzz FUZZ_SEED=$$RANDOM
FUZZ_SEED ?= 20261201
fuzz:
	set -e; for target in $(FUZZ_TARGETS); do \
		JAZZER_FUZZ=1 $(MVN) $(MVN_FLAGS) -q test -pl $${target%%:*} -am -Dtest="$${target#*:}" -Dsurefire.failIfNoSpecifiedTests=false \
			-Djazzer.internal.arg.0=fuzz -Djazzer.internal.arg.1=-seed=$(FUZZ_SEED); \
	done

## demo: build the distribution and run the demo: a prefill, a decode and a router on loopback, checked
## against a colocated engine (DEMO_ARGS adds options, e.g. make demo DEMO_ARGS="--json --transfer-backend mori")
DEMO_ARGS ?=
demo: dist
	$(HANDOFF) demo $(DEMO_ARGS)

## bench-llamacpp: prefill and decode tokens/s of Handoff and of llama.cpp (node-llama-cpp's prebuilt CPU binary, installed
## into testkit-node/llamacpp without its optional CUDA/Vulkan builds) on the same GGUF file and thread count, and the ratio:
## make bench-llamacpp MODEL=FILE.gguf [THREADS=2] [BENCH_ARGS="--prompt-len 512 --decode-tokens 64"]
MODEL ?=
THREADS ?= $(shell nproc)
BENCH_ARGS ?=
LLAMACPP_MODULES := testkit-node/llamacpp/node_modules
ifneq ($(filter bench-llamacpp,$(MAKECMDGOALS)),)
ifeq ($(MODEL),)
$(error make bench-llamacpp needs MODEL=FILE.gguf (a GGUF file both engines read))
endif
endif
bench-llamacpp: dist
	test -d $(LLAMACPP_MODULES)/node-llama-cpp || (cd testkit-node/llamacpp && npm ci --omit=optional --no-audit --no-fund)
	$(HANDOFF) bench compute --model-path $(MODEL) --batch 1 --threads $(THREADS) --llama-cpp $(LLAMACPP_MODULES) $(BENCH_ARGS)

## jmh: build the JMH micro benchmarks (benchmarks/target/handoff-benchmarks.jar, not in the distribution) and run them;
## JMH_ARGS passes JMH's own options, e.g. make jmh JMH_ARGS='-f1 -wi 1 -i 3 Radix' (a regex picks benchmarks, -p NAME=V
## sets a parameter, -l lists the benchmarks, -h the options). The whole set takes about 10 minutes.
## jmh-smoke: every benchmark and parameter once, for 100 ms, each in its own forked JVM (about 1.5 minutes)
JMH_ARGS ?=
JMH_JAR := benchmarks/target/handoff-benchmarks.jar
# JMH 1.37 takes a field offset through sun.misc.Unsafe, which JDK 25 warns about in every JVM it forks (they inherit this flag)
JMH_JAVA := $(JAVA_HOME)/bin/java --sun-misc-unsafe-memory-access=allow
jmh-jar:
	$(MVN) $(MVN_FLAGS) -q -DskipTests package -pl benchmarks -am
jmh: jmh-jar
	$(JMH_JAVA) -jar $(JMH_JAR) $(JMH_ARGS)
jmh-smoke: jmh-jar
	$(JMH_JAVA) -jar $(JMH_JAR) -f 1 -wi 0 -i 1 -r 100ms -foe true $(JMH_ARGS)

clean:
	$(MVN) $(MVN_FLAGS) clean
