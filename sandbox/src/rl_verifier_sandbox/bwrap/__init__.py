"""The bwrap backend: jobs under bubblewrap, leases of a uid and a cgroup, long-lived
processes, warm Python fork servers and the site dir they see."""
