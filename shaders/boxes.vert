// Octree overlay: box edges as lines, faded by tree level.
uniform mat4 u_mvp;
uniform vec2 u_levels;  // shown level range

attribute vec4 a_edge;  // xyz, level

varying float v_alpha;

void main() {
    gl_Position = u_mvp * vec4(a_edge.xyz, 1.0);
    float span = max(u_levels.y - u_levels.x, 1.0);
    v_alpha = 0.55 - 0.35 * (a_edge.w - u_levels.x) / span;
}
