"""A small, readable transformer (nanoGPT style) with ALiBi-type relative positional biases.

It follows the notation of Wang, Yu, E & Wu (2024), Sec. 3, Eqs. (1)-(3), with batch-first tensors:

* inputs are token ids ``(B, T)`` (``vocab_size`` set) or continuous tokens ``(B, T, d_in)``
  (``vocab_size=None``);
* an embedding ``x_s -> W_E x_s + b_E`` (plus an optional learned absolute position embedding);
* ``n_layers`` blocks ``X <- X + SA(X)`` (or ``X <- SA(X)`` without residual) then ``X <- X + FFN(X)``
  (optional);
* multi-head attention ``SA(Z) = W_O concat_h[ softmax(<W_Q^h z_i, W_K^h z_j> * scale + R^h_{ij}) W_V^h z_j ]``
  with the relative-position bias ``R^h_{ij} = -p_h (i - j - o)`` on allowed keys (Eq. 3: ``o = 1`` and
  strictly causal keys ``j < i`` for ``causal="strict"``; ``o = 0`` and ``j <= i`` for the usual
  ``causal="standard"``);
* a linear read-out ``head`` applied to every position (the paper reads the last one, ``TF_{-1}``).

After each forward pass ``model.attention_maps`` holds one ``(B, H, T, T)`` tensor per layer (rows: queries,
columns: keys; rows without any allowed key are all zero and their attention output is zero).

Weights can be set by hand with :meth:`Transformer.set_head`, :meth:`Transformer.set_output_proj`,
:meth:`Transformer.set_embedding`, :meth:`Transformer.set_readout` and :meth:`Transformer.set_ffn`; the
hand-built induction heads of ``lib.parts.induction_heads.construction`` use them.

Example::

    cfg = TransformerConfig(vocab_size=32, d_model=64, n_layers=2, n_heads=1, max_len=64)
    model = Transformer(cfg)
    logits = model(torch.randint(0, 32, (8, 64)))      # (8, 64, 32)
    A1, A2 = model.attention_maps                      # (8, 1, 64, 64) each
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import check_bool, check_in, check_instance, check_int, check_positive

__all__ = [
    "TransformerConfig",
    "alibi_bias",
    "softmax_attention",
    "MultiHeadAttention",
    "FFN",
    "LinearFFN",
    "Block",
    "Transformer",
    "default_alibi_slopes",
]


def _per_layer(name, value, n_layers, kind):
    """Expand a scalar (or a per-layer sequence) to a tuple of length ``n_layers``."""
    if isinstance(value, (list, tuple)):
        if len(value) != n_layers:
            raise ValueError(f"{name} must have one entry per layer ({n_layers}), got {len(value)}")
        return tuple(kind(v) for v in value)
    return tuple(kind(value) for _ in range(n_layers))


@dataclass
class TransformerConfig:
    """Configuration of :class:`Transformer`.

    Attributes:
        vocab_size: number of token ids, or ``None`` for continuous inputs of dimension ``d_in``.
        d_in: input dimension when ``vocab_size`` is None (ignored otherwise).
        d_model: width ``D`` of the residual stream.
        n_layers: number of blocks.
        n_heads: heads per layer (an int, or one int per layer).
        d_head: query/key/value width of each head (default ``d_model // n_heads``; the paper uses ``D``).
        max_len: longest sequence (size of the learned position table).
        ffn: the point-wise feed-forward map (with residual) of each block: ``True``/``"mlp"`` a two-layer ReLU
            FFN, ``"linear"`` one linear map ``x -> W x (+ b)``, ``False``/``"none"`` no FFN (one value, or one
            per layer).
        ffn_bias: biases in the FFN maps; ``None`` (default) keeps the historical behaviour (always biases,
            whatever ``bias`` says); ``True``/``False`` set them explicitly.
        query_identity: single-head layers with ``W_Q = I`` (no query parameter; needs ``d_head = d_model``):
            the scores are ``x_i^T W_K^T ...``, i.e. ``W_QK = W_K`` (Chen's model 4.1).
        random_pos: add frozen random absolute positions ``p_t ~ N(0, 1)`` (a buffer drawn at construction from
            the global torch generator, so never trained).
        ffn_hidden: hidden width ``M`` of the FFN (default ``4 * d_model``).
        residual: residual connection around attention (bool or one per layer; the paper's constructions use
            ``(True, False)``).
        rpe: ``"alibi"`` (per-head linear relative-position bias, Eq. 3) or ``"none"``.
        rpe_learnable: make the ALiBi slopes ``p_h`` trainable parameters.
        alibi_slopes: initial slopes, one per head (same for every layer); default: the geometric ALiBi slopes
            ``2^{-8h/H}`` of Press et al. (2022).
        learned_pos: add a learned absolute position embedding.
        causal: ``"standard"`` (a query attends to itself and earlier tokens) or ``"strict"`` (earlier tokens
            only, as in the paper: ``R_ij = -inf`` for ``i <= j``).
        attn_scale: multiplier of the dot products (default ``1/sqrt(d_head)``; the paper uses 1).
        layer_norm: pre-LayerNorm before attention, FFN and read-out (nanoGPT); the paper has none.
        d_out: read-out dimension (default ``vocab_size``, or ``d_in`` for continuous inputs).
        bias: biases in the embedding and FFN linear maps.
        init_std: standard deviation of the normal weight initialisation.
        record_attention: keep the (detached) attention maps of the last forward pass.
    """

    vocab_size: int | None = None
    d_in: int = 1
    d_model: int = 64
    n_layers: int = 2
    n_heads: int | tuple = 1
    d_head: int | None = None
    max_len: int = 256
    ffn: bool | str | tuple = False
    ffn_bias: bool | None = None
    query_identity: bool = False
    random_pos: bool = False
    ffn_hidden: int | None = None
    residual: bool | tuple = True
    rpe: str = "alibi"
    rpe_learnable: bool = False
    alibi_slopes: tuple | None = None
    learned_pos: bool = False
    causal: str = "standard"
    attn_scale: float | None = None
    layer_norm: bool = False
    d_out: int | None = None
    bias: bool = False
    init_std: float = 0.02
    record_attention: bool = True
    _layers: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if self.vocab_size is not None:
            check_int("vocab_size", self.vocab_size, minimum=1)
        check_int("d_in", self.d_in, minimum=1)
        check_int("d_model", self.d_model, minimum=1)
        check_int("n_layers", self.n_layers, minimum=1)
        check_int("max_len", self.max_len, minimum=1)
        check_in("rpe", self.rpe, ("alibi", "none"))
        check_in("causal", self.causal, ("standard", "strict"))
        check_positive("init_std", self.init_std, allow_zero=True)
        for flag in ("query_identity", "random_pos", "rpe_learnable", "learned_pos", "layer_norm", "bias",
                     "record_attention"):
            check_bool(flag, getattr(self, flag))  # a string such as "False" would be truthy
        if self.ffn_bias is not None:
            check_bool("ffn_bias", self.ffn_bias)
        for r in self.residual if isinstance(self.residual, (list, tuple)) else (self.residual,):
            check_bool("residual", r)
        for h in self.n_heads if isinstance(self.n_heads, (list, tuple)) else (self.n_heads,):
            check_int("n_heads", h, minimum=1)  # before int() would turn 2.5 into 2
        heads = _per_layer("n_heads", self.n_heads, self.n_layers, int)
        for h in heads:
            check_int("n_heads", h, minimum=1)
        if self.d_head is not None:
            check_int("d_head", self.d_head, minimum=1)
        elif any(self.d_model % h for h in heads):
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads {heads} when d_head is None"
            )
        if self.ffn_hidden is not None:
            check_int("ffn_hidden", self.ffn_hidden, minimum=1)
        if self.attn_scale is not None:
            check_positive("attn_scale", self.attn_scale)
        if self.d_out is not None:
            check_int("d_out", self.d_out, minimum=1)
        if self.query_identity and (any(h != 1 for h in heads) or self.head_dim_or_default() != self.d_model):
            raise ValueError("query_identity needs n_heads=1 and d_head=d_model in every layer")
        if self.alibi_slopes is not None and len(set(heads)) > 1:
            raise ValueError("alibi_slopes needs the same n_heads in every layer; set slopes with set_head")
        self._layers = {
            "n_heads": heads,
            "ffn": _per_layer("ffn", self.ffn, self.n_layers, _ffn_kind),
            "residual": _per_layer("residual", self.residual, self.n_layers, bool),
        }

    def head_dim_or_default(self) -> int:
        """``d_head`` if set, else ``d_model`` divided by the first layer's number of heads."""
        if self.d_head is not None:
            return self.d_head
        h = self.n_heads[0] if isinstance(self.n_heads, (list, tuple)) else self.n_heads
        return self.d_model // int(h)

    def heads(self, layer: int) -> int:
        return self._layers["n_heads"][layer]

    def head_dim(self, layer: int) -> int:
        return self.d_head if self.d_head is not None else self.d_model // self.heads(layer)

    @property
    def out_dim(self) -> int:
        if self.d_out is not None:
            return self.d_out
        return self.vocab_size if self.vocab_size is not None else self.d_in


def _check_config(cfg) -> None:
    if not isinstance(cfg, TransformerConfig):
        raise ValueError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")


def _ffn_kind(value) -> str:
    """Normalise one layer's ``ffn`` entry to ``"mlp"``, ``"linear"`` or ``"none"``."""
    if isinstance(value, bool):
        return "mlp" if value else "none"
    if value not in ("mlp", "linear", "none"):
        raise ValueError(f"ffn must be a bool or one of ('mlp', 'linear', 'none'), got {value!r}")
    return value


def default_alibi_slopes(n_heads: int) -> torch.Tensor:
    """The geometric ALiBi slopes ``2^{-8h/H}``, ``h = 1..H`` (Press et al., 2022), shape ``(H,)``."""
    check_int("n_heads", n_heads, minimum=1)
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / n_heads) for h in range(n_heads)])


def alibi_bias(T: int, slopes: torch.Tensor, causal: str = "standard") -> tuple[torch.Tensor, torch.Tensor]:
    """Relative-position bias ``phi(i - j; p_h)`` of Eq. (3) and the causal mask.

    Args:
        T: sequence length.
        slopes: ``(H,)`` slopes ``p_h`` (may carry gradients).
        causal: ``"strict"``: key ``j`` allowed iff ``j < i``, bias ``-p (i - j - 1)`` (Eq. 3);
            ``"standard"``: allowed iff ``j <= i``, bias ``-p (i - j)``.

    Returns:
        ``bias`` of shape ``(H, T, T)`` (zero on disallowed entries) and the boolean ``allowed`` mask
        ``(T, T)``.
    """
    check_instance("slopes", slopes, torch.Tensor)
    check_int("T", T, minimum=1)
    check_in("causal", causal, ("standard", "strict"))
    if slopes.ndim != 1:
        raise ValueError(f"slopes must be a 1-D tensor (H,), got shape {tuple(slopes.shape)}")
    i = torch.arange(T, device=slopes.device)
    lag = (i[:, None] - i[None, :]).to(slopes.dtype)
    offset = 1 if causal == "strict" else 0
    allowed = lag >= offset
    dist = torch.where(allowed, lag - offset, torch.zeros_like(lag))
    return -slopes[:, None, None] * dist, allowed


def softmax_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias=None, allowed=None, scale: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Masked softmax attention (Eq. 2 of the paper, one call for all heads).

    Args:
        q, k: ``(B, H, T, d_k)``; v: ``(B, H, T, d_v)``.
        bias: additive bias broadcastable to ``(B, H, T, T)`` or None.
        allowed: boolean mask broadcastable to ``(B, H, T, T)`` (True = the key may be attended) or None.
        scale: multiplier of ``q . k``.

    Returns:
        ``out`` ``(B, H, T, d_v)`` and the attention weights ``A`` ``(B, H, T, T)`` (rows sum to 1, or
        are all 0
        when a query has no allowed key).
    """
    # shapes and types only: this runs inside torch.func.vmap, where tests of the values cannot branch
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.ndim < 2 or t.numel() == 0:
            raise ValueError(f"{name} must be a non-empty tensor (..., T, d), got {t!r}")
    if k.shape[-1] != q.shape[-1] or v.shape[-2] != k.shape[-2]:
        raise ValueError(f"k must match q's width and v k's length, got q {tuple(q.shape)}, k {tuple(k.shape)}, "
                         f"v {tuple(v.shape)}")
    if not isinstance(scale, torch.Tensor):
        check_positive("scale", scale)
    scores = q @ k.transpose(-1, -2)
    if scale != 1.0:
        scores = scores * scale
    if bias is not None:
        scores = scores + bias
    if allowed is None:
        A = torch.softmax(scores, dim=-1)
    else:
        # rows with no allowed key give NaN here; they are zeroed below
        # (their gradients are zeroed by masked_fill)
        A = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        empty = ~allowed.any(dim=-1, keepdim=True)
        if bool(empty.any()):
            A = A.masked_fill(empty, 0.0)
    return A @ v, A


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention with per-head query/key/value maps and ALiBi slopes.

    Parameters (shapes): ``W_Q, W_K`` ``(H, d_head, D)``, ``W_V`` ``(H, d_head, D)``, ``W_O`` ``(D,
    H*d_head)``,
    ``slopes`` ``(H,)`` (parameter if ``rpe_learnable``, else buffer; absent when ``rpe="none"``).
    """

    def __init__(self, cfg: TransformerConfig, layer: int):
        super().__init__()
        _check_config(cfg)
        check_int("layer", layer, minimum=0, maximum=cfg.n_layers - 1)
        H, dh, D = cfg.heads(layer), cfg.head_dim(layer), cfg.d_model
        self.n_heads, self.d_head, self.causal = H, dh, cfg.causal
        self.scale = cfg.attn_scale if cfg.attn_scale is not None else 1.0 / math.sqrt(dh)
        std = cfg.init_std
        self.query_identity = cfg.query_identity
        self.W_Q = None if cfg.query_identity else nn.Parameter(std * torch.randn(H, dh, D))
        self.W_K = nn.Parameter(std * torch.randn(H, dh, D))
        self.W_V = nn.Parameter(std * torch.randn(H, dh, D))
        self.W_O = nn.Parameter(std * torch.randn(D, H * dh))
        self.rpe = cfg.rpe
        if cfg.rpe == "alibi":
            slopes = (
                torch.as_tensor(cfg.alibi_slopes, dtype=torch.get_default_dtype())
                if cfg.alibi_slopes is not None
                else default_alibi_slopes(H).to(torch.get_default_dtype())
            )
            if slopes.shape != (H,):
                raise ValueError(
                    f"alibi_slopes must have one entry per head ({H}), got {tuple(slopes.shape)}"
                )
            if cfg.rpe_learnable:
                self.slopes = nn.Parameter(slopes.clone())
            else:
                self.register_buffer("slopes", slopes.clone())
        self.record = cfg.record_attention
        self.attn = None

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``x``: ``(B, T, D)``; ``key_mask``: optional boolean ``(T,)`` or ``(B, T)`` of keys that may be
        attended (on top of causality). Returns ``(B, T, D)``."""
        B, T, D = x.shape
        if self.query_identity:
            q = x[:, None]
        else:
            q = torch.einsum("hkd,btd->bhtk", self.W_Q, x)
        k = torch.einsum("hkd,btd->bhtk", self.W_K, x)
        v = torch.einsum("hkd,btd->bhtk", self.W_V, x)
        if self.rpe == "alibi":
            bias, allowed = alibi_bias(T, self.slopes, self.causal)
        else:
            bias = None
            _, allowed = alibi_bias(T, torch.zeros(1, dtype=x.dtype, device=x.device), self.causal)
        allowed = allowed[None, None]
        if key_mask is not None:
            km = key_mask.to(torch.bool)
            km = km[None, None, None, :] if km.ndim == 1 else km[:, None, None, :]
            allowed = allowed & km
        out, A = softmax_attention(q, k, v, bias=bias, allowed=allowed, scale=self.scale)
        if self.record:
            self.attn = A.detach()
        out = out.transpose(1, 2).reshape(B, T, self.n_heads * self.d_head)
        return out @ self.W_O.T


class FFN(nn.Module):
    """Point-wise two-layer ReLU network ``x -> W_2 relu(W_1 x + b_1) + b_2`` of width ``M``."""

    def __init__(self, d_model: int, hidden: int, bias: bool = True):
        super().__init__()
        check_int("d_model", d_model, minimum=1)
        check_int("hidden", hidden, minimum=1)
        check_bool("bias", bias)
        self.fc1 = nn.Linear(d_model, hidden, bias=bias)
        self.fc2 = nn.Linear(hidden, d_model, bias=bias)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class LinearFFN(nn.Module):
    """Point-wise linear feed-forward map ``x -> W x + b`` (the "linear F" of Chen's ablations)."""

    def __init__(self, d_model: int, bias: bool = True):
        super().__init__()
        check_int("d_model", d_model, minimum=1)
        check_bool("bias", bias)
        self.fc = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x):
        return self.fc(x)


class Block(nn.Module):
    """One transformer layer: attention (with or without residual) then an optional residual FFN (Eq. 1)."""

    def __init__(self, cfg: TransformerConfig, layer: int):
        super().__init__()
        _check_config(cfg)
        check_int("layer", layer, minimum=0, maximum=cfg.n_layers - 1)
        self.attn = MultiHeadAttention(cfg, layer)
        self.residual = cfg._layers["residual"][layer]
        kind = cfg._layers["ffn"][layer]
        use_ffn = kind != "none"
        hidden = cfg.ffn_hidden if cfg.ffn_hidden is not None else 4 * cfg.d_model
        ffn_bias = True if cfg.ffn_bias is None else bool(cfg.ffn_bias)
        if kind == "mlp":
            self.ffn = FFN(cfg.d_model, hidden, bias=ffn_bias)
        elif kind == "linear":
            self.ffn = LinearFFN(cfg.d_model, bias=ffn_bias)
        else:
            self.ffn = None
        self.ln1 = nn.LayerNorm(cfg.d_model) if cfg.layer_norm else nn.Identity()
        self.ln2 = nn.LayerNorm(cfg.d_model) if (cfg.layer_norm and use_ffn) else nn.Identity()

    def forward(self, x, key_mask=None):
        a = self.attn(self.ln1(x), key_mask=key_mask)
        x = x + a if self.residual else a
        if self.ffn is not None:
            x = x + self.ffn(self.ln2(x))
        return x


class Transformer(nn.Module):
    """The configurable n-layer transformer of :class:`TransformerConfig` (see the module docstring)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        _check_config(cfg)
        self.cfg = cfg
        D = cfg.d_model
        if cfg.vocab_size is not None:
            self.embed = nn.Embedding(cfg.vocab_size, D)
        else:
            self.embed = nn.Linear(cfg.d_in, D, bias=cfg.bias)
        self.pos = nn.Embedding(cfg.max_len, D) if cfg.learned_pos else None
        self.blocks = nn.ModuleList(Block(cfg, layer) for layer in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(D) if cfg.layer_norm else nn.Identity()
        self.head = nn.Linear(D, cfg.out_dim, bias=False)
        self.apply(self._init)
        if cfg.random_pos:  # drawn after the weights, so the other parameters match a model without it
            self.register_buffer("fixed_pos", torch.randn(cfg.max_len, D))
        else:
            self.fixed_pos = None

    def _init(self, m):
        std = self.cfg.init_std
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, std)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)

    # ---------------------------------------------------------------------------------------------- forward
    def forward(self, x: torch.Tensor, key_masks=None, return_hidden: bool = False):
        """Run the model.

        Args:
            x: token ids ``(B, T)`` (int) or continuous tokens ``(B, T, d_in)``.
            key_masks: None, or one entry per layer (None or a boolean ``(T,)`` / ``(B, T)`` tensor of
            keys that
                may be attended in that layer, on top of causality).
            return_hidden: also return the residual stream after every layer (list of ``(B, T, D)``).

        Returns:
            ``(B, T, d_out)`` outputs at every position (and the hidden states when asked).
        """
        cfg = self.cfg
        if cfg.vocab_size is not None:
            if x.ndim != 2 or x.dtype not in (torch.int64, torch.int32):
                raise ValueError(
                    f"x must be integer token ids of shape (B, T), got {tuple(x.shape)} {x.dtype}"
                )
        elif x.ndim != 3 or x.shape[-1] != cfg.d_in:
            raise ValueError(f"x must have shape (B, T, {cfg.d_in}), got {tuple(x.shape)}")
        T = x.shape[1]
        if T > cfg.max_len and (cfg.learned_pos or cfg.random_pos):
            raise ValueError(f"sequence length {T} exceeds max_len={cfg.max_len}")
        if key_masks is not None and len(key_masks) != cfg.n_layers:
            raise ValueError(
                f"key_masks must have one entry per layer ({cfg.n_layers}), got {len(key_masks)}"
            )
        h = self.embed(x)
        if self.pos is not None:
            h = h + self.pos(torch.arange(T, device=h.device))[None]
        if self.fixed_pos is not None:
            h = h + self.fixed_pos[:T][None]
        hidden = []
        for layer, block in enumerate(self.blocks):
            h = block(h, key_mask=None if key_masks is None else key_masks[layer])
            hidden.append(h)
        out = self.head(self.ln_f(h))
        return (out, hidden) if return_hidden else out

    @property
    def attention_maps(self) -> list:
        """Attention weights of every layer from the last forward pass: list of ``(B, H, T, T)`` tensors."""
        return [b.attn.attn for b in self.blocks]

    # ----------------------------------------------------------------------------------- setting weights
    def _copy(self, param, value, name):
        value = torch.as_tensor(value, dtype=param.dtype, device=param.device)
        if value.shape != param.shape:
            raise ValueError(f"{name} must have shape {tuple(param.shape)}, got {tuple(value.shape)}")
        with torch.no_grad():
            param.copy_(value)

    def set_head(self, layer: int, head: int, W_Q=None, W_K=None, W_V=None, slope=None) -> None:
        """Set by hand the ``(d_head, D)`` query/key/value maps and the ALiBi slope ``p`` of one head."""
        check_int("layer", layer, minimum=0, maximum=self.cfg.n_layers - 1)
        attn = self.blocks[layer].attn
        check_int("head", head, minimum=0, maximum=attn.n_heads - 1)
        if W_Q is not None and attn.W_Q is None:
            raise ValueError("W_Q cannot be set: the model has query_identity=True (W_Q = I)")
        for name, value in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
            if value is not None:
                self._copy(getattr(attn, name)[head], value, name)
        if slope is not None:
            if attn.rpe != "alibi":
                raise ValueError("slope can only be set when rpe='alibi'")
            with torch.no_grad():
                attn.slopes[head] = float(slope)

    def set_output_proj(self, layer: int, W_O) -> None:
        """Set the ``(D, H*d_head)`` output projection of a layer's attention."""
        check_int("layer", layer, minimum=0, maximum=self.cfg.n_layers - 1)
        self._copy(self.blocks[layer].attn.W_O, W_O, "W_O")

    def set_embedding(self, W_E, b_E=None) -> None:
        """Set the embedding: ``(D, d_in)`` for continuous inputs (and bias ``(D,)``), ``(V, D)`` for
        tokens."""
        self._copy(self.embed.weight, W_E, "W_E")
        if b_E is not None:
            if getattr(self.embed, "bias", None) is None:
                raise ValueError("b_E given but the embedding has no bias (set bias=True in the config)")
            self._copy(self.embed.bias, b_E, "b_E")

    def set_readout(self, W) -> None:
        """Set the ``(d_out, D)`` read-out matrix."""
        self._copy(self.head.weight, W, "W")

    def set_ffn(self, layer: int, W1, b1, W2, b2) -> None:
        """Set a layer's FFN: ``W1`` ``(M, D)``, ``b1`` ``(M,)``, ``W2`` ``(D, M)``, ``b2`` ``(D,)``."""
        check_int("layer", layer, minimum=0, maximum=self.cfg.n_layers - 1)
        ffn = self.blocks[layer].ffn
        if not isinstance(ffn, FFN):
            raise ValueError(f"layer {layer} has no FFN (set ffn=True for it in the config)")
        self._copy(ffn.fc1.weight, W1, "W1")
        self._copy(ffn.fc1.bias, b1, "b1")
        self._copy(ffn.fc2.weight, W2, "W2")
        self._copy(ffn.fc2.bias, b2, "b2")

    def zero_(self) -> Transformer:
        """Set every parameter to zero (start of a hand construction); returns the model."""
        with torch.no_grad():
            for p in self.parameters():
                p.zero_()
        return self

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
