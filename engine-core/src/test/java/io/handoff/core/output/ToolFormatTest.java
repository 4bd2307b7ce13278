package io.handoff.core.output;

import io.handoff.core.grammar.ByteAutomaton;
import io.handoff.core.grammar.Grammar;
import io.handoff.core.json.Json;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/** Each family's calls: found in text the model writes, and held to its format when a call is required. */
class ToolFormatTest
{
    private static final List<ToolSpec> WEATHER = List.of(new ToolSpec("get_weather", Json.parse("{\"type\": \"object\", \"properties\": "
            + "{\"city\": {\"type\": \"string\", \"maxLength\": 8}}, \"required\": [\"city\"], \"additionalProperties\": false}", "test"), false));

    private static boolean takes(Grammar grammar, String text)
    {
        ByteAutomaton automaton = ByteAutomaton.compile(grammar);
        ByteAutomaton.State state = automaton.advance(automaton.start(), text.getBytes(StandardCharsets.UTF_8));
        return state != null && state.complete();
    }

    @Test
    void theFamilyIsReadOffTheTemplate()
    {
        assertThat(ToolFormat.of("{{ '<tool_call>' }}")).isEqualTo(ToolFormat.HERMES);
        assertThat(ToolFormat.of("{%- if tools %}<|python_tag|>{% endif %}")).isEqualTo(ToolFormat.LLAMA3);
        assertThat(ToolFormat.of("[AVAILABLE_TOOLS]{{ tools }}[TOOL_CALLS]")).isEqualTo(ToolFormat.MISTRAL);
        assertThat(ToolFormat.of("<｜tool▁calls▁begin｜>")).isEqualTo(ToolFormat.DEEPSEEK_V3);
        assertThat(ToolFormat.of("{{ messages }}")).isEqualTo(ToolFormat.GENERIC);
    }

    @Test
    void everyFamilysRequiredCallIsWhatItsParserReads()
    {
        List<String> written = List.of(
                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
                "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
                "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]",
                "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Oslo\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
        List<ToolFormat> formats = List.of(ToolFormat.HERMES, ToolFormat.LLAMA3, ToolFormat.MISTRAL, ToolFormat.DEEPSEEK_V3);
        for (int i = 0; i < formats.size(); i++) {
            ToolFormat format = formats.get(i);
            Grammar grammar = format.grammar(WEATHER, true, false).orElseThrow();
            assertThat(takes(grammar, written.get(i))).as(format.name()).isTrue();
            assertThat(takes(grammar, written.get(i).replace("Oslo", "Oslo, Norway"))).as(format.name() + ": maxLength").isFalse();
            ToolFormat.Parsed parsed = format.parse("Sure. " + written.get(i));
            assertThat(parsed.content()).as(format.name()).hasValue("Sure.");
            assertThat(parsed.calls()).as(format.name()).containsExactly(new ToolFormat.Call("get_weather", "{\"city\":\"Oslo\"}"));
        }
        assertThat(ToolFormat.MISTRAL.parse("[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {}}]").calls()).hasSize(1);
    }

    @Test
    void parallelCallsAreReadAndAllowedWhenAsked()
    {
        String two = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"A\"}}\n</tool_call>\n"
                + "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"B\"}}\n</tool_call>";
        assertThat(ToolFormat.HERMES.parse(two).calls()).extracting(ToolFormat.Call::arguments).containsExactly("{\"city\":\"A\"}", "{\"city\":\"B\"}");
        assertThat(takes(ToolFormat.HERMES.grammar(WEATHER, true, false).orElseThrow(), two)).isFalse();
        assertThat(takes(ToolFormat.HERMES.grammar(WEATHER, true, true).orElseThrow(), two)).isTrue();
        assertThat(ToolFormat.LLAMA3.parse("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"A\"}}; {\"name\": \"get_weather\", "
                + "\"parameters\": {\"city\": \"B\"}}").calls()).hasSize(2);
    }

    @Test
    void textThatIsNotACallStaysContent()
    {
        assertThat(ToolFormat.HERMES.parse("No tools needed.")).isEqualTo(new ToolFormat.Parsed(Optional.of("No tools needed."), List.of()));
        ToolFormat.Parsed broken = ToolFormat.HERMES.parse("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \n</tool_call>");
        assertThat(broken.calls()).isEmpty();
        assertThat(broken.content()).hasValueSatisfying(text -> assertThat(text).startsWith("<tool_call>"));
        assertThat(ToolFormat.HERMES.grammar(WEATHER, false, false)).as("auto, no strict tool: no grammar").isEmpty();
        assertThat(ToolFormat.HERMES.grammar(List.of(), true, false)).isEmpty();
    }

    @Test
    void mistralsCallsStartWithItsSpecialTokenWhenTheTokenizerHasIt()
    {
        int toolCalls = 5;
        Grammar grammar = ToolFormat.MISTRAL.grammar(WEATHER, true, false, java.util.OptionalInt.of(toolCalls)).orElseThrow();
        ByteAutomaton automaton = ByteAutomaton.compile(grammar);
        byte[] list = "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]".getBytes(StandardCharsets.UTF_8);
        assertThat(automaton.advance(automaton.start(), list)).as("not without the token").isNull();
        ByteAutomaton.State marked = automaton.next(automaton.start(), automaton.symbol(toolCalls));
        assertThat(marked).isNotNull();
        assertThat(automaton.advance(marked, list).complete()).isTrue();
        // strict under auto: text, or the token and the calls
        Grammar auto = ToolFormat.MISTRAL.grammar(List.of(new ToolSpec("get_weather", WEATHER.getFirst().parameters(), true)), false, false,
                java.util.OptionalInt.of(toolCalls)).orElseThrow();
        ByteAutomaton free = ByteAutomaton.compile(auto);
        ByteAutomaton.State text = free.advance(free.start(), "Let me look. ".getBytes(StandardCharsets.UTF_8));
        assertThat(text.complete()).isTrue();
        assertThat(free.advance(free.next(text, free.symbol(toolCalls)), list).complete()).isTrue();
        assertThat(ToolFormat.MISTRAL.parse("[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]").calls()).hasSize(1);
    }
}
