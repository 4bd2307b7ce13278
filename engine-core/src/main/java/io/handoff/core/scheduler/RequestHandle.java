package io.handoff.core.scheduler;

import java.util.concurrent.CompletableFuture;

/** A submitted request: its id and the future of its result. */
public record RequestHandle(String rid, CompletableFuture<GenerateResult> result) {}
