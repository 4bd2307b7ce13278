package io.handoff.status;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * A response body read into memory up to a limit: a server that sends more is cut off and the read fails, so a
 * hostile member cannot make {@code handoff cluster status} hold an answer of any size.
 */
final class BoundedBody
        implements HttpResponse.BodySubscriber<byte[]>
{
    private final int limit;
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final CompletableFuture<byte[]> result = new CompletableFuture<>();
    private Flow.Subscription subscription;

    private BoundedBody(int limit)
    {
        this.limit = limit;
    }

    /** Bodies of at most {@code limit} bytes. */
    static HttpResponse.BodyHandler<byte[]> handler(int limit)
    {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be positive, was " + limit);
        }
        return _ -> new BoundedBody(limit);
    }

    @Override
    public CompletionStage<byte[]> getBody()
    {
        return result;
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription)
    {
        this.subscription = subscription;
        subscription.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> buffers)
    {
        if (result.isDone()) {
            return;
        }
        for (ByteBuffer buffer : buffers) {
            if (bytes.size() + buffer.remaining() > limit) {
                subscription.cancel();
                result.completeExceptionally(new IOException("the answer is over " + limit + " bytes"));
                return;
            }
            byte[] chunk = new byte[buffer.remaining()];
            buffer.get(chunk);
            bytes.writeBytes(chunk);
        }
    }

    @Override
    public void onError(Throwable failure)
    {
        result.completeExceptionally(failure);
    }

    @Override
    public void onComplete()
    {
        result.complete(bytes.toByteArray());
    }
}
