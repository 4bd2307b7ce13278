package io.handoff.core.grammar;

import io.handoff.core.json.Json;
import org.junit.jupiter.api.Test;

import static io.handoff.core.grammar.GrammarMatching.matches;
import static io.handoff.core.grammar.GrammarMatching.prefix;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class JsonSchemaGrammarTest
{
    private static ByteAutomaton schema(String json)
    {
        return ByteAutomaton.compile(JsonSchemaGrammar.compile(Json.parse(json, "test"), "json_schema " + json));
    }

    @Test
    void objectsFollowTheirPropertiesInOrderWithRequiredOnesPresent()
    {
        ByteAutomaton a = schema("""
                {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]},
                 "confidence": {"type": "integer", "minimum": 0, "maximum": 100}, "note": {"type": "string"}},
                 "required": ["answer", "confidence"], "additionalProperties": false}""");
        assertThat(matches(a, "{\"answer\": \"yes\", \"confidence\": 100}")).isTrue();
        assertThat(matches(a, "{\"answer\":\"no\",\"confidence\":0,\"note\":\"x\"}")).isTrue();
        assertThat(matches(a, "{\n  \"answer\": \"no\",\n  \"confidence\": 7\n}")).isTrue();
        assertThat(matches(a, "{\"answer\": \"maybe\", \"confidence\": 1}")).isFalse();
        assertThat(matches(a, "{\"answer\": \"yes\", \"confidence\": 101}")).isFalse();
        assertThat(matches(a, "{\"answer\": \"yes\", \"confidence\": 07}")).isFalse();
        assertThat(matches(a, "{\"answer\": \"yes\"}")).isFalse();
        assertThat(matches(a, "{\"confidence\": 5, \"answer\": \"yes\"}")).isFalse();
        assertThat(matches(a, "{\"answer\": \"yes\", \"confidence\": 5, \"extra\": 1}")).isFalse();
    }

    @Test
    void integerRangesTakeExactlyTheirIntegers()
    {
        ByteAutomaton a = schema("{\"type\": \"integer\", \"minimum\": -123, \"exclusiveMaximum\": 4568}");
        for (int i = -200; i < 5000; i++) {
            assertThat(matches(a, Integer.toString(i))).as("%d", i).isEqualTo(i >= -123 && i <= 4567);
        }
        assertThat(matches(a, "-0")).isFalse();
        assertThat(matches(a, "+5")).isFalse();
    }

    @Test
    void numbersWithinBoundsStayWithinThem()
    {
        ByteAutomaton a = schema("{\"type\": \"number\", \"minimum\": -2, \"maximum\": 3}");
        assertThat(matches(a, "2.75")).isTrue();
        assertThat(matches(a, "-1.5")).isTrue();
        assertThat(matches(a, "3")).isTrue();
        assertThat(matches(a, "3.5")).isFalse();
        assertThat(matches(a, "-2.5")).isFalse();
        ByteAutomaton any = schema("{\"type\": \"number\"}");
        assertThat(matches(any, "-12.5e+3")).isTrue();
        assertThat(matches(any, "1.")).isFalse();
    }

    @Test
    void stringsCountCharactersAndTakeUnicodeAndEscapes()
    {
        ByteAutomaton a = schema("{\"type\": \"string\", \"minLength\": 2, \"maxLength\": 3}");
        assertThat(matches(a, "\"日本\"")).isTrue();
        assertThat(matches(a, "\"a\\\"b\"")).isTrue();
        assertThat(matches(a, "\"\\u00e9\\n😀\"")).isTrue();
        assertThat(matches(a, "\"abcd\"")).isFalse();
        assertThat(matches(a, "\"a\"")).isFalse();
        assertThat(matches(a, "\"a\nb\"")).as("a raw newline is not JSON").isFalse();
        assertThat(matches(a, "\"\\ud800x\"")).as("a lone surrogate escape").isFalse();
        assertThat(matches(a, "\"\\q1\"")).isFalse();
    }

    @Test
    void patternsMatchAnywhereUnlessAnchoredAndEscapeWhatJsonMust()
    {
        ByteAutomaton anchored = schema("{\"type\": \"string\", \"pattern\": \"^[a-z]+\\\"?$\"}");
        assertThat(matches(anchored, "\"abc\\\"\"")).isTrue();
        assertThat(matches(anchored, "\"abc\"\"")).isFalse();
        assertThat(matches(anchored, "\"ab1\"")).isFalse();
        ByteAutomaton search = schema("{\"type\": \"string\", \"pattern\": \"[0-9]{2}\"}");
        assertThat(matches(search, "\"x12y\"")).isTrue();
        assertThat(matches(search, "\"x1y\"")).isFalse();
    }

    @Test
    void arraysCountTheirItemsAndTuplesTheirPositions()
    {
        ByteAutomaton a = schema("{\"type\": \"array\", \"items\": {\"type\": \"string\", \"enum\": [\"a\", \"b\"]}, \"minItems\": 1, \"maxItems\": 3}");
        assertThat(matches(a, "[\"a\"]")).isTrue();
        assertThat(matches(a, "[\"a\", \"b\", \"a\"]")).isTrue();
        assertThat(matches(a, "[]")).isFalse();
        assertThat(matches(a, "[\"a\",\"a\",\"a\",\"a\"]")).isFalse();
        ByteAutomaton tuple = schema("{\"items\": [{\"type\": \"integer\"}, {\"type\": \"boolean\"}], \"additionalItems\": false}");
        assertThat(matches(tuple, "[1, true]")).isTrue();
        assertThat(matches(tuple, "[1]")).isTrue();
        assertThat(matches(tuple, "[true]")).isFalse();
        assertThat(matches(tuple, "[1, true, 2]")).isFalse();
    }

    @Test
    void unionsReferencesAndRecursion()
    {
        ByteAutomaton a = schema("""
                {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                  "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["v", "next"], "additionalProperties": false}},
                 "$ref": "#/$defs/node"}""");
        assertThat(matches(a, "{\"v\": 1, \"next\": {\"v\": 2, \"next\": null}}")).isTrue();
        assertThat(matches(a, "{\"v\": 1, \"next\": {\"v\": 2}}")).isFalse();
        ByteAutomaton oneOf = schema("{\"oneOf\": [{\"type\": \"string\"}, {\"type\": \"integer\"}]}");
        assertThat(matches(oneOf, "\"x\"")).isTrue();
        assertThat(matches(oneOf, "5")).isTrue();
        assertThat(matches(oneOf, "true")).isFalse();
        ByteAutomaton allOf = schema("{\"allOf\": [{\"properties\": {\"a\": {\"type\": \"integer\"}}, \"required\": [\"a\"]}, "
                + "{\"properties\": {\"b\": {\"type\": \"boolean\"}}, \"required\": [\"b\"]}], \"additionalProperties\": false}");
        assertThat(matches(allOf, "{\"a\": 1, \"b\": true}")).isTrue();
        assertThat(matches(allOf, "{\"a\": 1}")).isFalse();
    }

    @Test
    void anyObjectIsAnyJsonObjectAndEndsWhereTheObjectDoes()
    {
        ByteAutomaton a = ByteAutomaton.compile(JsonSchemaGrammar.anyObject());
        assertThat(matches(a, "{\"a\": [1, {\"b\": null}, \"é\"], \"c\": -0.5e3}")).isTrue();
        assertThat(matches(a, "[1]")).isFalse();
        assertThat(prefix(a, "{\"a\": 1} ")).as("nothing after the object").isFalse();
        assertThat(matches(a, "{" + " ".repeat(2 * JsonSchemaGrammar.MAX_WHITESPACE + 1) + "}")).as("whitespace is bounded").isFalse();
    }

    @Test
    void whatCannotBeEnforcedIsRefusedWithWhereAndWhy()
    {
        assertThatThrownBy(() -> schema("{\"type\": \"object\", \"properties\": {\"a\": {\"not\": {\"type\": \"string\"}}}}"))
                .isInstanceOf(GrammarException.class).hasMessage("#.properties.a: the keyword 'not' cannot be enforced by this engine; remove it");
        assertThatThrownBy(() -> schema("{\"type\": \"array\", \"uniqueItems\": true}")).hasMessageContaining("uniqueItems");
        assertThatThrownBy(() -> schema("{\"type\": \"string\", \"format\": \"hostname\"}")).hasMessageContaining("'hostname' cannot be enforced");
        assertThatThrownBy(() -> schema("{\"oneOf\": [{\"type\": \"integer\"}, {\"type\": \"number\"}]}")).hasMessageContaining("can both match");
        assertThatThrownBy(() -> schema("{\"$ref\": \"https://example.com/s.json\"}")).hasMessageContaining("outside this schema");
        assertThatThrownBy(() -> schema("{\"type\": \"string\", \"pattern\": \"(a)\\\\1\"}")).hasMessageContaining("#.pattern: regular expression");
        assertThatThrownBy(() -> schema("{\"type\": \"integer\", \"minimum\": 5, \"maximum\": 4}")).hasMessageContaining("no integer");
        assertThatThrownBy(() -> schema("{\"type\": \"strng\"}")).hasMessageContaining("unknown type 'strng'");
    }
}
