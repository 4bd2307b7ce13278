package io.handoff.core.json;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class JsonTest
{
    private static Object parse(String text)
    {
        return Json.parse(text.getBytes(StandardCharsets.UTF_8), 1 << 20, "test.json");
    }

    @Test
    void parsesEveryKindOfValueIntoPlainJavaValues()
    {
        Object value = parse(" {\"a\": [1, -2, 3.5, true, false, null, \"s\", {}, []], \"b\": {\"c\": \"d\"}} \n");

        assertThat(value).isEqualTo(Map.of(
                "a", Arrays.asList(1L, -2L, new BigDecimal("3.5"), true, false, null, "s", Map.of(), List.of()),
                "b", Map.of("c", "d")));
    }

    @Test
    void objectsKeepDocumentOrder()
    {
        @SuppressWarnings("unchecked")
        Map<String, Object> object = (Map<String, Object>) parse("{\"z\":1,\"a\":2,\"m\":3,\"b\":4}");

        assertThat(object.keySet()).containsExactly("z", "a", "m", "b");
    }

    @Test
    void decodesEveryEscapeIncludingSurrogatePairs()
    {
        Object value = parse("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\u20AC \\ud83d\\ude00 raw é😀\"");

        assertThat(value).isEqualTo("\" \\ / \b \f \n \r \t é € \uD83D\uDE00 raw é😀");
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"\\ud83d\"", "\"\\ud83d x\"", "\"\\ud83d\\u0041\"", "\"\\ude00\""})
    void loneSurrogateEscapesAreRefused(String text)
    {
        assertThatThrownBy(() -> parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("test.json: invalid JSON at offset")
                .hasMessageContaining("surrogate");
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"\\x\"", "\"\\u12g4\"", "\"\\u12\"", "\"tab\tinside\"", "\"line\nbreak\""})
    void badEscapesAndRawControlCharactersAreRefused(String text)
    {
        assertThatThrownBy(() -> parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("invalid JSON at offset");
    }

    @Test
    void integersThatFitALongAreLongsAndOtherNumbersAreExactBigDecimals()
    {
        Object value = parse("[0, -0, 9223372036854775807, 9223372036854775808, 1e-6, 1.5E+3, -2.25e2, 500000.0]");

        assertThat(value).isEqualTo(List.of(0L, 0L, Long.MAX_VALUE, new BigDecimal("9223372036854775808"),
                new BigDecimal("1e-6"), new BigDecimal("1.5E+3"), new BigDecimal("-2.25e2"), new BigDecimal("500000.0")));
    }

    @ParameterizedTest
    @ValueSource(strings = {"01", "1.", ".5", "-", "+1", "1e", "1e+", "0x10", "NaN", "Infinity", "1e99999999999"})
    void malformedNumbersAreRefused(String text)
    {
        assertThatThrownBy(() -> parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("test.json: invalid JSON at offset");
    }

    @Test
    void nestingUpToTheLimitIsReadAndDeeperIsRefused()
    {
        String deepest = "[".repeat(Json.MAX_DEPTH) + "]".repeat(Json.MAX_DEPTH);
        String tooDeep = "[".repeat(Json.MAX_DEPTH + 1) + "]".repeat(Json.MAX_DEPTH + 1);

        assertThat(parse(deepest)).isInstanceOf(List.class);
        assertThatThrownBy(() -> parse(tooDeep))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("test.json: invalid JSON at offset 64: nesting deeper than 64 levels is refused");
    }

    @Test
    void nestingFarDeeperThanTheStackAllowsIsRefusedWithoutOverflowingIt()
    {
        assertThatThrownBy(() -> parse("{\"a\":".repeat(200_000)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("nesting deeper than 64 levels");
    }

    @ParameterizedTest
    @ValueSource(strings = {"{} x", "[1] [2]", "true false", "\"a\"\"b\"", "1 2", "{}}"})
    void trailingGarbageIsRefused(String text)
    {
        assertThatThrownBy(() -> parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("expected end of input after the top-level value");
    }

    @Test
    void truncatedInputIsRefusedAtItsEnd()
    {
        assertThatThrownBy(() -> parse("{\"a\": [1, 2"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("test.json: invalid JSON at offset 11: expected ',' or ']' in an array, found the end of input (truncated?)");
        assertThatThrownBy(() -> parse("{\"name\": \"unterminated"))
                .hasMessage("test.json: invalid JSON at offset 22: expected '\"' closing the string, found the end of input (truncated?)");
        assertThatThrownBy(() -> parse(""))
                .hasMessage("test.json: invalid JSON at offset 0: expected a value, found the end of input (truncated?)");
    }

    @ParameterizedTest
    @ValueSource(strings = {"tru", "nul", "True", "{'a': 1}", "{\"a\" 1}", "{\"a\": 1,}", "[1,]", "{1: 2}", "\uFEFF{}"})
    void anythingButStrictJsonIsRefused(String text)
    {
        assertThatThrownBy(() -> parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("invalid JSON at offset");
    }

    @Test
    void duplicateKeysAreRefusedNamingTheKey()
    {
        assertThatThrownBy(() -> parse("{\"w\": 1, \"x\": 2, \"w\": 3}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("test.json: invalid JSON at offset 17: duplicate key \"w\"; each key may appear once per object");
    }

    @Test
    void inputOverTheCallersLimitIsRefusedBeforeParsing()
    {
        byte[] bytes = "[1, 2, 3]".getBytes(StandardCharsets.UTF_8);

        assertThatThrownBy(() -> Json.parse(bytes, 8, "big.json"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("big.json: JSON of 9 bytes is over the limit of 8 bytes");
        assertThat(Json.parse(bytes, 9, "big.json")).isEqualTo(List.of(1L, 2L, 3L));
    }

    @Test
    void invalidUtf8IsRefused()
    {
        byte[] bytes = {'"', (byte) 0xC3, '"'};

        assertThatThrownBy(() -> Json.parse(bytes, 100, "bad.json"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("bad.json: JSON is not valid UTF-8");
    }
}
