package io.handoff.core.grammar;

import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import io.handoff.core.json.Json;
import io.handoff.core.json.JsonText;
import io.handoff.core.model.tokenizer.NodeReference;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The schemas of the public JSON-Schema-Test-Suite (draft 4, npm {@code json-schema-test-suite}): each one either
 * compiles, or is refused with a reason that names what cannot be enforced. A compiled one must never take an instance
 * the suite marks invalid, and the JSON it generates (random walks of its automaton) must validate against the schema
 * under an independent validator (networknt's).
 */
class JsonSchemaSuiteTest
{
    private static final int WALKS = 24;
    private static final SchemaRegistry VALIDATORS = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_4);

    @Test
    void suiteSchemasCompileOrAreRefusedWithAReasonAndWhatTheyGenerateValidates()
            throws IOException
    {
        Path draft4 = NodeReference.nodeModules("json-schema-test-suite/tests/draft4/enum.json").resolve("json-schema-test-suite/tests/draft4");
        int compiled = 0;
        int refused = 0;
        int invalidRejected = 0;
        int generated = 0;
        List<String> failures = new ArrayList<>();
        try (Stream<Path> files = Files.list(draft4)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".json")).sorted().toList()) {
                String name = file.getFileName().toString();
                if (name.equals("refRemote.json")) {
                    continue; // references to a server the suite starts
                }
                for (Object group : (List<?>) Json.parse(Files.readString(file), name)) {
                    Map<?, ?> g = (Map<?, ?>) group;
                    String label = name + " / " + g.get("description");
                    Object schema = g.get("schema");
                    ByteAutomaton automaton;
                    try {
                        automaton = ByteAutomaton.compile(JsonSchemaGrammar.compile(schema, "suite " + label));
                    }
                    catch (GrammarException e) {
                        refused++;
                        // the refusal names where in the schema (a path from #) and why
                        assertThat(e.getMessage()).as(label).matches("(?s)#[^ ]*: .{20,}");
                        continue;
                    }
                    compiled++;
                    for (Object test : (List<?>) g.get("tests")) {
                        Map<?, ?> t = (Map<?, ?>) test;
                        if (Boolean.FALSE.equals(t.get("valid"))) {
                            String instance = JsonText.write(t.get("data"));
                            if (GrammarMatching.matches(automaton, instance)) {
                                failures.add(label + ": takes " + instance + ", which the suite calls invalid (" + t.get("description") + ")");
                            }
                            invalidRejected++;
                        }
                    }
                    Schema validator = VALIDATORS.getSchema(JsonText.write(schema), InputFormat.JSON);
                    SplittableRandom random = new SplittableRandom(label.hashCode());
                    for (int walk = 0; walk < WALKS; walk++) {
                        String sentence = RandomSentences.walk(automaton, random, 4000);
                        if (sentence == null) {
                            continue;
                        }
                        generated++;
                        var errors = validator.validate(sentence, InputFormat.JSON);
                        if (!errors.isEmpty()) {
                            failures.add(label + ": generated " + sentence + ", which is invalid: " + errors);
                        }
                    }
                }
            }
        }
        assertThat(failures).isEmpty();
        // the suite's draft 4 has 69 schemas (refRemote aside): most are taken, the rest refused with their reason
        assertThat(compiled + refused).isEqualTo(69);
        assertThat(compiled).isGreaterThanOrEqualTo(47);
        assertThat(invalidRejected).isGreaterThan(80);
        assertThat(generated).isGreaterThan(1000);
    }

    /** Random sentences of a grammar: bytes drawn uniformly among those its automaton takes, ending where it may. */
    static final class RandomSentences
    {
        private RandomSentences() {}

        /** A sentence, or null when the walk ran past {@code maxBytes} first. */
        static String walk(ByteAutomaton automaton, SplittableRandom random, int maxBytes)
        {
            ByteAutomaton.State state = automaton.start();
            byte[] out = new byte[maxBytes];
            for (int length = 0; length < maxBytes; length++) {
                int[] options = new int[256];
                int count = 0;
                for (int b = 0; b < 256; b++) {
                    if (automaton.next(state, b) != null) {
                        options[count++] = b;
                    }
                }
                if (state.complete() && (count == 0 || random.nextInt(4) == 0)) {
                    return new String(out, 0, length, StandardCharsets.UTF_8);
                }
                assertThat(count).as("a state that can neither end nor go on").isPositive();
                int b = options[random.nextInt(count)];
                out[length] = (byte) b;
                state = automaton.next(state, b);
            }
            return null;
        }
    }
}
