"""The fake vLLM OpenAI server of the simulated Ascend cluster.

``server.py`` and the modules it imports (``vlog``, ``cli``, ``model``, ``devices``, ``procs``, ``faults``,
``engine``, ``metrics``, ``api``, ``dp``) use the standard library only: they are copied as the package
``fake_vllm`` into the fake vLLM image (``images/fake-vllm``), where this project is not installed. Keep this
file free of imports. ``flags.py`` (flag table from the catalog) and ``context.py`` (image build context) run
on the controller and may use the orchestrator package.
"""
