"""The op suite: single-op models run in gpulite and in LiteRT, compared per backend."""
