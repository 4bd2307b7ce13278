package io.handoff.cluster;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The watch stream's messages, as etcd 3.4's gateway writes them, and ones it never writes. No etcd needed. */
class EtcdWatchTest
{
    private static final String PREFIX = "/h/";
    // "/h/a" and "/h/c" in base64, "hello" as the value.
    private static final String CREATED = "{\"result\":{\"header\":{\"revision\":\"2\"},\"created\":true}}\n";
    private static final String PUT = "{\"result\":{\"header\":{\"revision\":\"3\"},\"events\":[{\"kv\":{\"key\":\"L2gvYw==\",\"mod_revision\":\"3\",\"value\":\"aGVsbG8=\",\"lease\":\"9\"}}]}}\n";
    private static final String DELETE = "{\"result\":{\"header\":{\"revision\":\"4\"},\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":\"L2gvYw==\",\"mod_revision\":\"4\"}}]}}\n";

    private static EtcdWatch watch(String stream)
    {
        return new EtcdWatch("http://127.0.0.1:2379", new ByteArrayInputStream(stream.getBytes(StandardCharsets.UTF_8)), PREFIX, 3);
    }

    @Test
    void putsAndDeletesArriveInOrderAndTheRevisionIsTracked()
            throws Exception
    {
        EtcdWatch watch = watch(CREATED + PUT + "\n" + DELETE);
        assertThat(watch.revision()).isEqualTo(2);

        List<EtcdWatch.Event> put = watch.next();
        assertThat(put).singleElement().satisfies(event -> {
            assertThat(event.delete()).isFalse();
            assertThat(event.kv().key()).isEqualTo("/h/c");
            assertThat(new String(event.kv().value(), StandardCharsets.UTF_8)).isEqualTo("hello");
            assertThat(event.kv().lease()).isEqualTo(9);
        });
        assertThat(watch.revision()).isEqualTo(3);

        assertThat(watch.next()).singleElement().satisfies(event -> {
            assertThat(event.delete()).isTrue();
            assertThat(event.kv().key()).isEqualTo("/h/c");
        });
        assertThat(watch.revision()).isEqualTo(4);
        assertThatThrownBy(watch::next).isInstanceOf(IOException.class).hasMessageContaining("watch stream from etcd at http://127.0.0.1:2379 ended");
    }

    @Test
    void aCompactedStartRevisionIsReportedAsSuch()
    {
        EtcdWatch watch = watch(CREATED + "{\"result\":{\"header\":{},\"canceled\":true,\"compact_revision\":\"40\"}}\n");
        assertThatThrownBy(watch::next).isInstanceOf(EtcdWatch.Compacted.class).hasMessageContaining("compacted its history to revision 40");
    }

    @Test
    void messagesEtcdNeverSendsAreErrors()
    {
        assertThatThrownBy(watch("not json\n")::next).isInstanceOf(IOException.class).hasMessageContaining("not JSON");
        assertThatThrownBy(watch("{\"error\":{\"grpc_code\":14}}\n")::next).isInstanceOf(IOException.class).hasMessageContaining("ended the watch");
        assertThatThrownBy(watch("{\"result\":{\"events\":[{\"type\":\"BOOM\",\"kv\":{}}]}}\n")::next).hasMessageContaining("an event of type 'BOOM'");
        assertThatThrownBy(watch("{\"result\":{\"events\":[{\"kv\":{\"key\":\"L3gvYQ==\",\"mod_revision\":\"5\"}}]}}\n")::next)
                .hasMessageContaining("outside the watched prefix /h/");
        // An event from before the revision the watch started at.
        assertThatThrownBy(watch(PUT.replace("\"mod_revision\":\"3\"", "\"mod_revision\":\"1\""))::next).hasMessageContaining("before the revision already seen");
        assertThatThrownBy(watch("{\"result\":{\"canceled\":true}}\n")::next).hasMessageContaining("canceled the watch");
    }

    @Test
    void aMessageOverTheLimitIsRefusedBeforeItIsParsed()
    {
        String huge = "{\"result\":\"" + "x".repeat(EtcdClient.MAX_ANSWER) + "\"}\n";
        assertThatThrownBy(watch(huge)::next).isInstanceOf(IOException.class).hasMessageContaining("over " + EtcdClient.MAX_ANSWER + " bytes");
    }

    @Test
    void anOversizedValueIsReportedAsMissingNotFatal()
            throws Exception
    {
        String value = java.util.Base64.getEncoder().encodeToString(new byte[EtcdClient.MAX_VALUE + 1]);
        EtcdWatch watch = watch(PUT.replace("aGVsbG8=", value));
        assertThat(watch.next()).singleElement().satisfies(event -> assertThat(event.kv().value()).isNull());
    }
}
