"""What the local HTTP servers (``rlv reward-server``, ``rlv serve``) share: start-up,
listening sockets, header deadlines, who may connect."""
