package io.handoff.cluster;

import org.junit.jupiter.api.Test;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The JSON value of a member's key: what a server writes reads back as the same member; anything else is refused. */
class MemberRecordTest
{
    private static final Member DECODE = new Member("decode-0", MemberRole.DECODE, "0f3a9c", URI.create("http://10.0.0.7:30002"), "mla.p16.bf16-77", 8192, true);
    private static final Instant AT = Instant.parse("2026-12-01T21:00:00.123Z");

    @Test
    void aRecordReadsBackAsTheSameMember()
    {
        byte[] json = new MemberRecord(DECODE, AT).toJson();
        assertThat(new String(json, StandardCharsets.UTF_8)).isEqualTo("{\"role\":\"decode\",\"incarnation\":\"0f3a9c\",\"http\":\"http://10.0.0.7:30002\","
                + "\"compatibility\":\"mla.p16.bf16-77\",\"capacity\":8192,\"draining\":true,\"registered_at\":\"2026-12-01T21:00:00.123Z\"}");
        assertThat(MemberRecord.parse("decode-0", json)).isEqualTo(new MemberRecord(DECODE, AT));
    }

    @Test
    void fieldsOfANewerVersionAreIgnored()
    {
        String json = new String(new MemberRecord(DECODE, AT).toJson(), StandardCharsets.UTF_8).replace("}", ",\"zone\":\"b\"}");
        assertThat(MemberRecord.parse("decode-0", json.getBytes(StandardCharsets.UTF_8)).member()).isEqualTo(DECODE);
    }

    @Test
    void invalidRecordsAreRefusedNamingWhatIsWrong()
    {
        assertRefused("decode-0", "{\"role\":\"router\"}", "'role' is 'router', expected prefill or decode");
        assertRefused("decode-0", valid().replace("\"http://10.0.0.7:30002\"", "\"http://10.0.0.7\""), "does not name a host and a port");
        assertRefused("decode-0", valid().replace("\"http://10.0.0.7:30002\"", "\"file:///etc/passwd\""), "is not an http:// or https:// URL");
        assertRefused("decode-0", valid().replace("\"http://10.0.0.7:30002\"", "\"http://u:p@10.0.0.7:1/\""), "without user info");
        assertRefused("decode-0", valid().replace("\"0f3a9c\"", "\"" + "a".repeat(300) + "\""), "'incarnation' is 300 characters");
        assertRefused("decode-0", valid().replace("\"0f3a9c\"", "\"bad inc\""), "incarnation 'bad inc'");
        assertRefused("decode-0", valid().replace("8192", "-1"), "capacity of member decode-0 is negative");
        assertRefused("decode-0", valid().replace("8192", "1.5"), "'capacity' is 1.5, not an integer");
        assertRefused("decode-0", valid().replace("true", "\"yes\""), "'draining' is \"yes\", not true or false");
        assertRefused("decode-0", valid().replace(",\"compatibility\":\"mla.p16.bf16-77\"", ""), "the record has no 'compatibility'");
        assertRefused("decode-0", valid().replace("2026-12-01T21:00:00.123Z", "yesterday"), "'registered_at' is not an ISO-8601 instant");
        assertRefused("-x", valid(), "member id '-x'");
        assertRefused("decode-0", "{\"role\":\"decode\",\"role\":\"prefill\"}", "Duplicate field 'role'");
        assertRefused("decode-0", "{} {}", "not JSON");
        assertRefused("decode-0", " ".repeat(MemberRecord.MAX_BYTES + 1), "over the limit of " + MemberRecord.MAX_BYTES);
        assertThatThrownBy(() -> MemberRecord.parse("decode-0", null)).hasMessageContaining("the value is over");
    }

    private static String valid()
    {
        return new String(new MemberRecord(DECODE, AT).toJson(), StandardCharsets.UTF_8);
    }

    private static void assertRefused(String id, String json, String expected)
    {
        assertThatThrownBy(() -> MemberRecord.parse(id, json.getBytes(StandardCharsets.UTF_8)))
                .as(json.length() > 100 ? json.substring(0, 100) : json)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(expected);
    }
}
