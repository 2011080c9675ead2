"""The fake vLLM OpenAI server of the simulated Ascend cluster (payload: runs only inside simulated servers).

``server.py`` and the modules it imports (``vlog``, ``cli``, ``model``, ``devices``, ``procs``, ``faults``,
``engine``, ``metrics``, ``api``, ``dp``) use the standard library only: they are copied as the package
``fake_vllm`` into the fake vLLM image (``ascend_sim/payloads/fake-vllm``), where the orchestrator is not
installed. Keep this file free of imports. The controller side (flag table, build context, checkpoint
generator) lives in ``ascend_sim/`` and never imports this package.
"""
