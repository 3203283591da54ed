"""The campaign's formats and vocabulary: policy, manifest, queue files, ledger, wrappers lock, stamps,
front matter, blocks, the failure catalog, job specs and states. Imports only ``core``.
"""
