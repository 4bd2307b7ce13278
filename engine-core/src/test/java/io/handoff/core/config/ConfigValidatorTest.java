package io.handoff.core.config;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigParseOptions;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reference is the schema: its values give the types, its comment lines ({@code allowed:},
 * {@code type:}, {@code free-form}) narrow them. Each error names the path, the value seen and what is
 * allowed; unknown keys are warnings that suggest the closest known key.
 */
class ConfigValidatorTest
{
    private static final Config REFERENCE = ConfigFactory.parseString("""
            handoff {
              kv {
                # Tokens per page.
                # allowed: 1..256
                page-size = 16
                # type: bytes
                pool-size = 1GiB
                # 0: off.
                # type: bytes
                pool-memory = 0
                # Fraction of memory for the pool.
                # allowed: 0.1..0.95
                memory-fraction = 0.8
              }
              transfer {
                # allowed: auto | on | off
                early-send = "auto"
                # type: duration
                timeout = 30s
                retries = 3
                verify = true
                peers = []
              }
              plugins {
                # free-form
                extra {
                }
              }
            }
            """, ConfigParseOptions.defaults().setOriginDescription("test reference")).resolve();

    @Test
    void valuesThatMatchTheReferencePassWithoutWarnings()
    {
        ConfigValidator.Result result = validate("""
                handoff.kv.page-size = 256
                handoff.kv.pool-size = 64MiB
                handoff.kv.memory-fraction = 0.5
                handoff.transfer.early-send = off
                handoff.transfer.timeout = 500ms
                handoff.transfer.retries = 0
                handoff.transfer.verify = false
                handoff.transfer.peers = ["a:1", "b:2"]
                """);

        assertThat(result.errors()).isEmpty();
        assertThat(result.warnings()).isEmpty();
    }

    @Test
    void aSizeThatDefaultsToABareNumberTakesAUnit()
    {
        assertThat(validate("handoff.kv.pool-memory = 8GiB").errors()).isEmpty();
        assertThat(validate("handoff.kv.pool-memory = 1024").errors()).isEmpty();
        assertThat(singleError("handoff.kv.pool-memory = lots")).contains("expected a size in bytes");
    }

    @Test
    void theReferenceDocumentsEachKeyWithItsTypeFromTheSameComments()
    {
        ConfigReference reference = ConfigReference.of(REFERENCE);

        assertThat(reference.entries()).extracting(ConfigReference.Entry::path, ConfigReference.Entry::type).contains(
                org.assertj.core.groups.Tuple.tuple("handoff.kv.page-size", "integer, 1 to 256"),
                org.assertj.core.groups.Tuple.tuple("handoff.kv.pool-memory", "bytes"),
                org.assertj.core.groups.Tuple.tuple("handoff.transfer.early-send", "one of auto, on, off"),
                org.assertj.core.groups.Tuple.tuple("handoff.transfer.timeout", "duration"));
        assertThat(reference.undocumented()).containsExactlyInAnyOrder("handoff.kv.pool-size", "handoff.transfer.early-send",
                "handoff.transfer.timeout", "handoff.transfer.retries", "handoff.transfer.verify", "handoff.transfer.peers");
        assertThat(reference.markdown()).contains("## handoff.kv", "| `page-size` | `16` | integer, 1 to 256 | Tokens per page. |");
    }

    @Test
    void typoedKeyWarnsNamingItAndTheClosestKnownKey()
    {
        ConfigValidator.Result result = validate("handoff.kv.page-sise = 32");

        assertThat(result.errors()).isEmpty();
        assertThat(result.warnings()).singleElement().asString()
                .contains("unknown configuration key 'handoff.kv.page-sise'", "did you mean 'handoff.kv.page-size'?", "ignored");
    }

    @Test
    void unknownKeyFarFromEveryKnownKeyWarnsWithoutASuggestion()
    {
        ConfigValidator.Result result = validate("handoff.scheduler.max-running-requests = 32");

        assertThat(result.warnings()).singleElement().asString()
                .contains("'handoff.scheduler.max-running-requests'")
                .doesNotContain("did you mean");
    }

    @Test
    void keyOutsideTheHandoffTreeWarns()
    {
        ConfigValidator.Result result = validate("kv.page-size = 32");

        assertThat(result.errors()).isEmpty();
        assertThat(result.warnings()).singleElement().asString().contains("'kv.page-size'", "live under 'handoff'");
    }

    @Test
    void keysUnderAFreeFormObjectAreNotChecked()
    {
        ConfigValidator.Result result = validate("handoff.plugins.extra { anything = 1, nested { deep = true } }");

        assertThat(result.errors()).isEmpty();
        assertThat(result.warnings()).isEmpty();
    }

    @Test
    void wordWhereAnIntegerIsExpectedFailsNamingPathValueAndAllowedRange()
    {
        assertThat(singleError("handoff.kv.page-size = \"sixteen\""))
                .contains("handoff.kv.page-size = \"sixteen\"", "expected an integer", "allowed: 1..256");
    }

    @Test
    void fractionWhereAnIntegerIsExpectedFails()
    {
        assertThat(singleError("handoff.kv.page-size = 16.5"))
                .contains("handoff.kv.page-size = 16.5", "expected an integer", "allowed: 1..256");
    }

    @Test
    void integerAboveTheAllowedRangeFailsNamingTheRange()
    {
        assertThat(singleError("handoff.kv.page-size = 300"))
                .contains("handoff.kv.page-size = 300", "out of range", "allowed: 1..256");
    }

    @Test
    void integerBelowTheAllowedRangeFails()
    {
        assertThat(singleError("handoff.kv.page-size = 0")).contains("handoff.kv.page-size = 0", "out of range");
    }

    @Test
    void numberOutsideADecimalRangeFails()
    {
        assertThat(singleError("handoff.kv.memory-fraction = 0.99"))
                .contains("handoff.kv.memory-fraction = 0.99", "out of range", "allowed: 0.1..0.95");
    }

    @Test
    void valueOutsideTheAllowedChoicesFailsListingThem()
    {
        assertThat(singleError("handoff.transfer.early-send = \"sometimes\""))
                .contains("handoff.transfer.early-send = \"sometimes\"", "not an allowed value", "allowed: auto | on | off");
    }

    @Test
    void malformedDurationFailsWithAnExample()
    {
        assertThat(singleError("handoff.transfer.timeout = \"soon\""))
                .contains("handoff.transfer.timeout = \"soon\"", "expected a duration (e.g. 30s, 500ms)");
    }

    @Test
    void malformedSizeFailsWithAnExample()
    {
        assertThat(singleError("handoff.kv.pool-size = \"lots\""))
                .contains("handoff.kv.pool-size = \"lots\"", "expected a size in bytes (e.g. 64MiB)");
    }

    @Test
    void nonBooleanWhereABooleanIsExpectedFails()
    {
        assertThat(singleError("handoff.transfer.verify = \"maybe\""))
                .contains("handoff.transfer.verify = \"maybe\"", "expected a boolean (true or false)");
    }

    @Test
    void scalarWhereAListIsExpectedFails()
    {
        assertThat(singleError("handoff.transfer.peers = \"a:1\""))
                .contains("handoff.transfer.peers = \"a:1\"", "expected a list");
    }

    @Test
    void scalarWhereAnObjectIsExpectedFails()
    {
        assertThat(singleError("handoff.kv = 5")).contains("handoff.kv = 5", "expected an object");
    }

    @Test
    void objectWhereAScalarIsExpectedFails()
    {
        assertThat(singleError("handoff.kv.page-size { value = 16 }"))
                .contains("handoff.kv.page-size = {\"value\":16}", "expected an integer, not an object", "allowed: 1..256");
    }

    @Test
    void objectWhereAScalarIsExpectedIsOneErrorHoweverManyKeysItHolds()
    {
        ConfigValidator.Result result = validate("handoff.transfer.timeout { seconds = 30, millis = 0 }");

        assertThat(result.errors()).singleElement().asString().contains("handoff.transfer.timeout", "expected a duration");
        assertThat(result.warnings()).isEmpty();
    }

    @Test
    void errorNamesTheFileAndLineTheValueCameFrom()
    {
        Config user = ConfigFactory.parseString("handoff {\n  kv.page-size = 300\n}",
                ConfigParseOptions.defaults().setOriginDescription("my.conf"));

        assertThat(ConfigValidator.validate(user, REFERENCE).errors()).singleElement().asString().contains("my.conf", "2");
    }

    @Test
    void everyProblemIsReportedNotOnlyTheFirst()
    {
        ConfigValidator.Result result = validate("""
                handoff.kv.page-size = 300
                handoff.transfer.early-send = sometimes
                handoff.transfer.timeout = soon
                handoff.kv.page-sise = 3
                """);

        assertThat(result.errors()).hasSize(3);
        assertThat(result.warnings()).hasSize(1);
    }

    private static ConfigValidator.Result validate(String user)
    {
        return ConfigValidator.validate(ConfigFactory.parseString(user), REFERENCE);
    }

    private static String singleError(String user)
    {
        ConfigValidator.Result result = validate(user);
        assertThat(result.errors()).as("errors for %s", user).hasSize(1);
        return result.errors().getFirst();
    }
}
