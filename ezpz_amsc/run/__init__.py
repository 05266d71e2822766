"""One run directory in, its steps reduced and cross-checked: the export's pipeline stages.

In the order :func:`ezpz_amsc.export.export_run` calls them: ``layout`` (find
the files) → ``placement`` (system, nodes, gpus) → ``steps`` (read the chosen
rank's records; ``skim`` passes over other ranks' lines) → ``reduce`` →
``crosschecks`` → ``columns`` (the row's cells). ``details`` holds the typed
story of where each number came from. Import-free, so loading it costs nothing.
"""
