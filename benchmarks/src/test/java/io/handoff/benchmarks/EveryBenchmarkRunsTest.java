package io.handoff.benchmarks;

import io.handoff.benchmarks.kv.PagePoolBenchmark;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

import java.io.IOException;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every benchmark, with every parameter, runs for one short iteration in this JVM and gives a score: a benchmark whose
 * setup throws, or that the annotation processor did not register, fails the build. No figure is checked: speed is
 * for {@code make jmh} to report, not for a test to judge.
 */
class EveryBenchmarkRunsTest
{
    @Test
    void everyDeclaredBenchmarkRunsOnceWithEachParameterAndScores()
            throws RunnerException, IOException, URISyntaxException
    {
        Options once = new OptionsBuilder()
                .include(Pattern.quote(EveryBenchmarkRunsTest.class.getPackageName() + "."))
                .forks(0)
                .warmupIterations(0)
                .measurementIterations(1)
                .measurementTime(TimeValue.milliseconds(20))
                .shouldFailOnError(true)
                .verbosity(VerboseMode.SILENT)
                .build();

        Collection<RunResult> results = new Runner(once).run();

        List<String> declared = declaredBenchmarks();
        assertThat(results.stream().map(result -> result.getParams().getBenchmark()).collect(Collectors.toSet()))
                .containsExactlyInAnyOrderElementsOf(declared);
        assertThat(results).as("runs, one per benchmark and combination of its parameters")
                .hasSize(declared.stream().mapToInt(EveryBenchmarkRunsTest::parameterCombinations).sum());
        for (RunResult result : results) {
            assertThat(result.getPrimaryResult().getScore())
                    .as("%s %s", result.getParams().getBenchmark(), result.getParams().getParamsKeys().stream()
                            .map(key -> key + "=" + result.getParams().getParam(key)).toList())
                    .isPositive()
                    .isFinite();
        }
    }

    // every @Benchmark method of the compiled benchmark classes, as JMH names them (class.method)
    private static List<String> declaredBenchmarks()
            throws IOException, URISyntaxException
    {
        Path classes = Path.of(PagePoolBenchmark.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        try (Stream<Path> files = Files.walk(classes)) {
            List<String> benchmarks = files
                    .map(file -> classes.relativize(file).toString())
                    .filter(name -> name.endsWith("Benchmark.class") && !name.contains("jmh_generated"))
                    .map(name -> name.substring(0, name.length() - ".class".length()).replace('/', '.'))
                    .flatMap(EveryBenchmarkRunsTest::benchmarkMethods)
                    .toList();
            assertThat(benchmarks).as("benchmarks compiled in " + classes).isNotEmpty();
            return benchmarks;
        }
    }

    private static int parameterCombinations(String benchmark)
    {
        String className = benchmark.substring(0, benchmark.lastIndexOf('.'));
        try {
            return Arrays.stream(Class.forName(className).getDeclaredFields())
                    .filter(field -> field.isAnnotationPresent(Param.class))
                    .mapToInt(field -> field.getAnnotation(Param.class).value().length)
                    .reduce(1, (a, b) -> a * b);
        }
        catch (ClassNotFoundException e) {
            throw new AssertionError("benchmark class " + className + " does not load", e);
        }
    }

    private static Stream<String> benchmarkMethods(String className)
    {
        try {
            Method[] methods = Class.forName(className).getDeclaredMethods();
            return Arrays.stream(methods).filter(method -> method.isAnnotationPresent(Benchmark.class)).map(method -> className + "." + method.getName());
        }
        catch (ClassNotFoundException e) {
            throw new AssertionError("compiled benchmark class " + className + " does not load", e);
        }
    }
}
