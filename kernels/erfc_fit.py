#!/usr/bin/python3
"""Derives the polynomial of erfcx_for_f32 (kernels/include/tenax/kernels/float_math.hpp) and
measures its error.

For a >= 0, erfc(a) e^(a^2) = t Q(t) with t = 1 / (1 + a/2). g(t) = erfc(a) e^(a^2) / t is smooth
on t in [0.16, 1] (a in [0, 10.5]), between 1 and 0.57; Q interpolates it at the Chebyshev nodes
of degree 20, written as a polynomial in s = (2t - 1.16) / 0.84 (which maps the range onto
[-1, 1]), its coefficients printed from the highest degree down, as the header's Horner scheme
uses them.

The check evaluates t Q in double as the header does (Horner in s) and multiplies by an exact
e^(-a^2), so it measures the polynomial's part of the relative error of erfc, on a grid of a over
[0, 10.5]. Needs python3-mpmath.

Usage: kernels/erfc_fit.py
"""
import mpmath as mp

A_MAX = mp.mpf("10.5")
DEGREE = 20
mp.mp.dps = 40
T_MIN = 1 / (1 + A_MAX / 2)  # 0.16


def a_of(t):
    return (1 / t - 1) * 2


def g(t):
    a = a_of(t)
    return mp.erfc(a) * mp.exp(a * a) / t


def monomial_coefficients():
    n = DEGREE + 1
    nodes = [mp.cos(mp.pi * (k + mp.mpf("0.5")) / n) for k in range(n)]
    values = [g((s * (1 - T_MIN) + (1 + T_MIN)) / 2) for s in nodes]
    cheb = [sum(values[k] * mp.cos(mp.pi * j * (k + mp.mpf("0.5")) / n) for k in range(n)) *
            (2 if j else 1) / n for j in range(n)]
    # Chebyshev polynomials T_j as monomials in s.
    basis = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for j in range(2, n):
        poly = [mp.mpf(0)] * (j + 1)
        for i, v in enumerate(basis[j - 1]):
            poly[i + 1] += 2 * v
        for i, v in enumerate(basis[j - 2]):
            poly[i] -= v
        basis.append(poly)
    mono = [mp.mpf(0)] * n
    for j in range(n):
        for i, v in enumerate(basis[j]):
            mono[i] += cheb[j] * v
    return [float(c) for c in mono]


def worst_relative_error(mono):
    worst, where = 0.0, 0.0
    for i in range(20001):
        a = float(A_MAX) * i / 20000
        t = 1.0 / (1.0 + 0.5 * a)
        s = (2.0 * t - 1.16) * (1.0 / 0.84)
        p = 0.0
        for c in reversed(mono):
            p = p * s + c
        approx = mp.mpf(t * p) * mp.exp(-mp.mpf(a) * mp.mpf(a))
        exact = mp.erfc(a)
        err = float(abs((approx - exact) / exact))
        if err > worst:
            worst, where = err, a
    return worst, where


def main():
    mono = monomial_coefficients()
    for c in reversed(mono):
        print(repr(c))
    worst, where = worst_relative_error(mono)
    print(f"worst relative error {worst:.3g} at a = {where}")


if __name__ == "__main__":
    main()
