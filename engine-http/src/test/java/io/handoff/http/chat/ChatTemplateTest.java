package io.handoff.http.chat;

import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ChatTemplateTest
{
    // Paraphrases of the shapes real templates have, not their text.
    static final String LLAMA3_STYLE = """
            {{- bos_token }}
            {%- if messages[0]['role'] == 'system' %}
                {%- set system = messages[0]['content'] | trim %}
                {%- set rest = messages[1:] %}
            {%- else %}
                {%- set system = "" %}
                {%- set rest = messages %}
            {%- endif %}
            {%- if system %}
            {{- '<|start_header_id|>system<|end_header_id|>\\n\\n' + system + '<|eot_id|>' }}
            {%- endif %}
            {%- for m in rest %}
                {{- '<|start_header_id|>' ~ m.role ~ '<|end_header_id|>\\n\\n' ~ m.content | trim ~ '<|eot_id|>' }}
            {%- endfor %}
            {%- if add_generation_prompt %}
                {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
            {%- endif %}
            """;

    /** Relies on trim_blocks and lstrip_blocks alone: every tag line vanishes. */
    static final String CHATML_STYLE = """
            {% for message in messages %}
                {% if loop.first and message.role != 'system' %}
            <|im_start|>system
            You are helpful.<|im_end|>
                {% endif %}
            <|im_start|>{{ message.role }}
            {{ message.content }}<|im_end|>
            {% endfor %}
            {% if add_generation_prompt %}
            <|im_start|>assistant
            {% endif %}
            """;

    static final String ALTERNATING = """
            {%- for message in messages %}
              {%- if (message.role == 'user') != (loop.index0 % 2 == 0) %}
                {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
              {%- endif %}
              {{- '[' ~ message.role|upper ~ '] ' ~ message.content ~ '\\n' }}
            {%- endfor %}
            """;

    /** The Qwen-style scan for the last real user query: namespace(), a reversed slice, string methods. */
    static final String LAST_QUERY = """
            {%- set ns = namespace(last=messages|length - 1, found=false) %}
            {%- for m in messages[::-1] %}
                {%- set i = (messages|length - 1) - loop.index0 %}
                {%- if not ns.found and m.role == 'user' and not m.content.startswith('<tool>') %}
                    {%- set ns.found = true %}
                    {%- set ns.last = i %}
                {%- endif %}
            {%- endfor %}
            {%- for m in messages %}
                {%- if '</think>' in m.content %}
                    {%- set content = m.content.split('</think>')[-1].lstrip('\\n') %}
                {%- else %}
                    {%- set content = m.content %}
                {%- endif %}
                {{- loop.index0 ~ (':Q' if loop.index0 == ns.last else ':') ~ content ~ ('|' if not loop.last) }}
            {%- endfor %}
            """;

    private static final List<ChatMessage> CONVERSATION = List.of(
            new ChatMessage("system", "  Be brief. "),
            new ChatMessage("user", "Hi"),
            new ChatMessage("assistant", "Hello!"),
            new ChatMessage("user", "Bye"));

    private static String render(String template, List<ChatMessage> messages, boolean addGenerationPrompt)
    {
        return ChatTemplate.parse(template, "<|begin_of_text|>", "<|eot_id|>").render(messages, addGenerationPrompt);
    }

    @Test
    void llama3StyleTemplateRendersHeadersAndGenerationPrompt()
    {
        assertThat(render(LLAMA3_STYLE, CONVERSATION, true)).isEqualTo("<|begin_of_text|>"
                + "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                + "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                + "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
                + "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
                + "<|start_header_id|>assistant<|end_header_id|>\n\n");
        assertThat(render(LLAMA3_STYLE, List.of(new ChatMessage("user", "Hi")), false))
                .isEqualTo("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
    }

    @Test
    void chatMlStyleTemplateDependsOnTrimAndLstripBlocks()
    {
        assertThat(render(CHATML_STYLE, List.of(new ChatMessage("user", "Hi"), new ChatMessage("assistant", "Yo")), true)).isEqualTo(
                "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nYo<|im_end|>\n"
                        + "<|im_start|>assistant\n");
        assertThat(render(CHATML_STYLE, List.of(new ChatMessage("system", "S"), new ChatMessage("user", "Hi")), false))
                .isEqualTo("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
    }

    @Test
    void raiseExceptionRefusesABadRoleOrderWithTheTemplatesMessage()
    {
        assertThat(render(ALTERNATING, List.of(new ChatMessage("user", "a"), new ChatMessage("assistant", "b")), false))
                .isEqualTo("[USER] a\n[ASSISTANT] b\n");
        assertThatThrownBy(() -> render(ALTERNATING, List.of(new ChatMessage("user", "a"), new ChatMessage("user", "b")), false))
                .isInstanceOfSatisfying(ChatTemplateException.class, e -> assertThat(e.raised()).isTrue())
                .hasMessage("Conversation roles must alternate user/assistant/user/assistant/...");
    }

    @Test
    void namespaceCarriesStateOutOfALoopOverAReversedSlice()
    {
        List<ChatMessage> messages = List.of(
                new ChatMessage("user", "q1"),
                new ChatMessage("assistant", "<think>\nhm\n</think>\n\nA1"),
                new ChatMessage("user", "q2"),
                new ChatMessage("user", "<tool>x"));
        assertThat(render(LAST_QUERY, messages, false)).isEqualTo("0:q1|1:A1|2:Qq2|3:<tool>x");
    }

    @Test
    void whitespaceControlFollowsJinja()
    {
        List<ChatMessage> none = List.of();
        assertThat(render("a  {%- if true -%}  b  {%- endif -%}  c", none, false)).isEqualTo("abc");
        assertThat(render("a  {% if true %}\n\nb\n  {% endif %}\nc\n", none, false)).isEqualTo("a  \nb\nc");
        assertThat(render("x\n    {%+ if true %}y{% endif %}", none, false)).isEqualTo("x\n    y");
        assertThat(render("{{ 'v' }}\n{# note #}\n  {{- ' w' }}", none, false)).isEqualTo("v\n w");
        assertThat(render("{{ 'v' }}\nz", none, false)).isEqualTo("v\nz");
    }

    @Test
    void expressionsHavePythonSemantics()
    {
        List<ChatMessage> none = List.of();
        assertThat(render("{{ [1, 'a', none, true] | tojson }}", none, false)).isEqualTo("[1, \"a\", null, true]");
        assertThat(render("{{ {'k': 'é\"'} | tojson }}", none, false)).isEqualTo("{\"k\": \"é\\\"\"}");
        assertThat(render("{{ tools is defined }}|{{ tools is not defined }}|{{ documents }}|{{ none }}", none, false))
                .isEqualTo("False|True||None");
        assertThat(render("{{ 7 // 2 }} {{ 7 / 2 }} {{ -7 % 3 }} {{ 'ab' * 2 if false else 'no' }}", none, false)).isEqualTo("3 3.5 2 no");
        assertThat(render("{{ '  x '.strip() + '-' + 'a,b,,c'.split(',')|length|string }}", none, false)).isEqualTo("x-4");
        assertThat(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }}{{ ',' if not loop.last }}{% endfor %}", none, false))
                .isEqualTo("a=1,b=2");
        assertThat(render("{% for i in range(5) if i is odd %}{{ i }}{% else %}none{% endfor %}", none, false)).isEqualTo("13");
        assertThat(render("{% for i in [] %}{{ i }}{% else %}none{% endfor %}", none, false)).isEqualTo("none");
        assertThat(render("{% set x %}in{{ 1 + 1 }}{% endset %}{{ x }}", none, false)).isEqualTo("in2");
        assertThat(render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}", none, false)).isEqualTo("1");
        assertThat(render("{{ eos_token }}{{ bos_token }}", none, false)).isEqualTo("<|eot_id|><|begin_of_text|>");
    }

    @Test
    void strftimeNowReadsTheGivenClock()
    {
        Clock clock = Clock.fixed(Instant.parse("2024-07-05T09:03:00Z"), ZoneOffset.UTC);
        ChatTemplate template = ChatTemplate.parse("{{ strftime_now('%d %b %Y') }} | {{ strftime_now('%A %B %-d %H:%M') }}", "", "", clock);
        assertThat(template.render(List.of(), false)).isEqualTo("05 Jul 2024 | Friday July %-d 09:03");
    }

    @Test
    void extraVariablesReachTheTemplate()
    {
        ChatTemplate template = ChatTemplate.parse("{{ 'think' if enable_thinking is defined and enable_thinking is false else 'x' }}", "", "");
        assertThat(template.render(List.of(), false, Map.of("enable_thinking", false))).isEqualTo("think");
        assertThat(template.render(List.of(), false)).isEqualTo("x");
    }

    @Test
    void unsupportedOrBrokenTemplatesFailInParseNamingTheProblem()
    {
        assertThatThrownBy(() -> ChatTemplate.parse("a\n{% macro m() %}{% endmacro %}", "", ""))
                .isInstanceOf(ChatTemplateException.class)
                .hasMessageContaining("line 2").hasMessageContaining("'macro' is not supported");
        assertThatThrownBy(() -> ChatTemplate.parse("{% if x %}open", "", ""))
                .hasMessageContaining("ends inside a block");
        assertThatThrownBy(() -> ChatTemplate.parse("{{ x ", "", ""))
                .hasMessageContaining("never closed");
        assertThatThrownBy(() -> render("{{ nothing.at_all }}", List.of(), false))
                .isInstanceOfSatisfying(ChatTemplateException.class, e -> assertThat(e.raised()).isFalse())
                .hasMessageContaining("'nothing' is undefined");
    }
}
