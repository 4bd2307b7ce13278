package io.handoff.dist;

import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.fault.FaultPlan;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.LogprobRequest;
import io.handoff.core.scheduler.Logprobs;
import io.handoff.core.scheduler.RequestHandle;
import io.handoff.core.scheduler.TokenListener;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static io.handoff.dist.InProcessPd.NEW_TOKENS;
import static io.handoff.dist.InProcessPd.PROMPT;
import static io.handoff.dist.InProcessPd.await;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Log probabilities through a prefill and a decode equal a colocated engine's to the bit: the prompt's and the first
 * token's are computed on the prefill and travel in the aux record, the rest are the decode's own. A decode whose request
 * implies another shape than the prefill sent fails the request as a protocol violation.
 */
class LogprobsPdIT
{
    private static GenerateRequest request(String rid, int maxNewTokens, LogprobRequest logprobs)
    {
        GenerateRequest plain = new GenerateRequest(rid, PROMPT, maxNewTokens, SamplingParams.GREEDY, Set.of(), true, false);
        return logprobs == null ? plain : plain.withLogprobs(logprobs);
    }

    @Test
    void promptAndOutputLogprobsThroughPrefillAndDecodeEqualColocated()
            throws Exception
    {
        LogprobRequest asked = new LogprobRequest(3, 0);
        GenerateResult reference = InProcessPd.colocated(request("reference", NEW_TOKENS, asked));
        assertThat(reference.logprobs().input()).hasSize(PROMPT.length - 1);
        List<TokenLogprob> streamed = new ArrayList<>();
        List<Logprobs> promptHeard = new ArrayList<>();
        try (InProcessPd pd = new InProcessPd(Map.of(), new FaultPlan(), Disaggregation.Options.DEFAULT)) {
            GenerateResult prefill;
            GenerateResult decode;
            RequestHandle prefillHandle = pd.startPrefill(1, request("r1", NEW_TOKENS, asked));
            RequestHandle decodeHandle = pd.startDecode(1, request("r1", NEW_TOKENS, asked), new TokenListener()
            {
                @Override
                public void onToken(int index, int tokenId)
                {
                }

                @Override
                public void onToken(int index, int tokenId, TokenLogprob logprob)
                {
                    assertThat(promptHeard).as("the prompt's log probabilities come before the first token").hasSize(1);
                    streamed.add(logprob);
                }

                @Override
                public void onPrompt(Logprobs prompt)
                {
                    assertThat(streamed).isEmpty();
                    promptHeard.add(prompt);
                }
            });
            prefill = await(prefillHandle);
            decode = await(decodeHandle);

            assertThat(decode.outputIds()).isEqualTo(reference.outputIds());
            assertThat(decode.logprobs()).isEqualTo(reference.logprobs());
            assertThat(streamed).isEqualTo(reference.logprobs().output());
            // what the prefill sent with the first token, delivered to the decode's listener then
            assertThat(promptHeard).containsExactly(new Logprobs(1, reference.logprobs().input(), List.of()));
            assertThat(prefill.logprobs().input()).isEqualTo(reference.logprobs().input());

            // output log probabilities only: the prefill may reuse the prompt's cached prefix, the result is the same
            LogprobRequest outputOnly = new LogprobRequest(LogprobRequest.MAX_TOP_N, -1);
            RequestHandle secondPrefill = pd.startPrefill(2, request("r2", NEW_TOKENS, outputOnly));
            GenerateResult second = await(pd.startDecode(2, request("r2", NEW_TOKENS, outputOnly), TokenListener.NONE));
            GenerateResult secondReference = InProcessPd.colocated(request("reference-2", NEW_TOKENS, outputOnly));
            assertThat(await(secondPrefill).cachedTokens()).as("the prefill reused the first request's prompt").isPositive();
            assertThat(second.outputIds()).isEqualTo(reference.outputIds());
            assertThat(second.logprobs()).isEqualTo(secondReference.logprobs());
            assertThat(second.logprobs().input()).isEmpty();
            assertThat(second.logprobs().output()).hasSize(NEW_TOKENS);
        }
    }

    @Test
    void aDecodeRefusesLogprobsOfAnotherShapeThanItsRequestImplies()
            throws Exception
    {
        try (InProcessPd pd = new InProcessPd(Map.of(), new FaultPlan(), Disaggregation.Options.DEFAULT)) {
            // the prefill was asked for the prompt's from position 0, the decode for them from position 5
            pd.startPrefill(1, request("r1", NEW_TOKENS, new LogprobRequest(2, 0)));
            GenerateResult shifted = await(pd.startDecode(1, request("r1", NEW_TOKENS, new LogprobRequest(2, 5)), TokenListener.NONE));
            assertThat(shifted.finishReason()).isEqualTo(FinishReason.ERROR);
            assertThat(shifted.cause()).contains(FailureCause.TRANSPORT_FAILURE);
            assertThat(shifted.error()).hasValueSatisfying(error -> assertThat(error).contains("protocol violation")
                    .contains("255 prompt log probabilities from position 1; the request's are 251 from position 5"));
            assertThat(shifted.logprobs()).isEqualTo(new Logprobs(5, List.of(), List.of()));

            pd.startPrefill(2, request("r2", NEW_TOKENS, null));
            GenerateResult missing = await(pd.startDecode(2, request("r2", NEW_TOKENS, new LogprobRequest(2, -1)), TokenListener.NONE));
            assertThat(missing.error()).hasValueSatisfying(error -> assertThat(error).contains("protocol violation")
                    .contains("carries no log probabilities, but the request asked for them"));
            assertThat(missing.outputIds()).isEmpty();
        }
    }
}
