"""A search-tool training environment for rl-verifier and the Fictopedia task set.

``rl_verifier_search_env.env`` holds the ``search_tools`` environment, ``.fictopedia`` the
bundled task set and ``.generate`` the offline generator of its corpus and questions.
"""
