package io.handoff.cluster;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/** An HTTP answer body read into memory, refused (and the exchange cancelled) as soon as it exceeds {@code limit} bytes. */
final class BoundedBody
        implements HttpResponse.BodySubscriber<byte[]>
{
    /** The answer was longer than the limit. */
    static final class TooLarge
            extends IOException
    {
        TooLarge(String message)
        {
            super(message);
        }
    }

    private final int limit;
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final CompletableFuture<byte[]> result = new CompletableFuture<>();
    private Flow.Subscription subscription;

    BoundedBody(int limit)
    {
        this.limit = limit;
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
                result.completeExceptionally(new TooLarge("more than " + limit + " bytes; refused"));
                return;
            }
            byte[] chunk = new byte[buffer.remaining()];
            buffer.get(chunk);
            bytes.write(chunk, 0, chunk.length);
        }
    }

    @Override
    public void onError(Throwable throwable)
    {
        result.completeExceptionally(throwable);
    }

    @Override
    public void onComplete()
    {
        result.complete(bytes.toByteArray());
    }
}
