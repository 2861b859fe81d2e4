// Full-screen pass over the accumulated light.
attribute vec2 a_xy;
varying vec2 v_uv;

void main() {
    v_uv = 0.5 * (a_xy + 1.0);
    gl_Position = vec4(a_xy, 0.0, 1.0);
}
